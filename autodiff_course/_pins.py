"""The exact versions requirements.txt pins, for the setup cell's report.

Generated from requirements.txt by the lesson build (course_tools.pins); do not edit:
change requirements.txt and run `./course.sh build`. A test fails when this is stale.
"""

PINS = {
    "anywidget": "0.11.0",
    "cycler": "0.12.1",
    "ipykernel": "7.4.0",
    "ipywidgets": "8.1.9",
    "jupyterlab": "4.6.6",
    "jupyterlab-rise": "0.43.1",
    "jupyterlab-widgets": "3.0.17",
    "keras": "3.15.1",
    "matplotlib": "3.11.2",
    "numpy": "2.4.6",
    "tensorflow": "2.21.0",
}
