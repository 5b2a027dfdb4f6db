"""The course's own tooling, kept apart from the helper package the notebooks import:
``python -m course_tools.progress`` grades learners' notebooks by re-running their
exercise checks, and ``python -m course_tools.nbgrader_export`` turns ``solutions/``
into an nbgrader course source. Both read the exercises from the solutions notebooks
at run time, so they follow the lessons as they change."""
