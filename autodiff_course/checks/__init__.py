"""Exercise checks, one module per lesson (``from autodiff_course.checks import lesson01 as check``)."""
