"""The course's own tooling, kept apart from the helper package the notebooks import.

Every command is a module run as ``python -m course_tools.<module>`` (``./course.sh``
calls them): ``build_lessons``, ``build_instructor_guide``, ``make_figures``,
``benchmark`` (with ``benchmark_explorer``, ``benchmark_memory``, ``benchmark_checks``,
``benchmark_hub``), ``progress`` (with ``grading``, ``grading_verdicts`` and
``progress_table``), ``nbgrader_export``, ``pins`` and ``quiet_jupyterlab``. They share
``config`` (course.toml and the folders), ``notebook_format`` (the notebooks'
conventions), ``lessons`` (the exercises, read from solutions/), ``style`` (ruff),
``derived`` and ``browser`` (JupyterLab in Chromium); the graders' containment
(``sandbox``, ``kernel_limits``, ``nbgrader_sandbox``), the hub (``hub_image``, ``hub``,
``notebook_merge``), ``tracked_files`` and ``interpreters``.
The helper package ``autodiff_course`` never imports this one.
"""
