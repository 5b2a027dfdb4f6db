"""Exercise checks, one module or package per lesson.

A notebook imports its lesson's checks as ``from autodiff_course.checks import lesson03 as
check``; a lesson package (``lesson03/``) holds one module per exercise and re-exports
every check under its own name.
"""
