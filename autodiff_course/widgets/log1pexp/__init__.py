"""The log1pexp explorer of lesson 03: gradients of log(1 + e^x) as x grows.

Pick a dtype, an x range, the methods and the quantity; the plot and the readout
show what ``tf.GradientTape`` computes, point by point, for three ways of writing
``log(1 + e^x)`` (see :mod:`autodiff_course.log1pexp`). ``nan`` and ``inf`` points,
and silent 0.0 results where the float64 reference is not 0, are marked in a
strip above the plot and described in words; the float format's limits are drawn
as lines and a shaded band.

One module per part: :mod:`.state` (the immutable view), :mod:`.tables` (every
number the explorer can show, computed with the tape), :mod:`.data` (what one view
selects from them), :mod:`.wording` (summary, alt text, readout table),
:mod:`.figure` (the still picture, with :mod:`.text_stamps`), :mod:`.widget` (the
tables handed to the front end, ``static/log1pexp.js``, which draws them).

Driving it from Python (tests, benchmark, ``course_tools.make_figures``)::

    explorer = Log1pexpExplorer()                    # float32, x in [-20, 100], gradient
    explorer.set_state(dtype="float64", quantity="value")   # several at once
    explorer.plotted_data()["naive"].nan             # what the plot shows, per method
    explorer.readout_values().methods["naive"]["gradient"]
    render_png(ExplorerState(dtype="float64"))       # any view as PNG bytes
"""

from ...log1pexp import DTYPES
from ...log1pexp import METHODS
from ...log1pexp import QUANTITIES
from .data import PlottedSeries
from .data import ReadoutValues
from .data import plotted_series
from .data import readout_values
from .figure import FIGURE_SIZE
from .figure import WIDGET_DPI
from .figure import ExplorerFigure
from .figure import render_png
from .state import DEFAULT_QUANTITY
from .state import DEFAULT_READOUT_X
from .state import DEFAULT_X_RANGE
from .state import X_BOUNDS
from .state import X_STEPS
from .state import ExplorerState
from .tables import Table
from .tables import explorer_table
from .widget import CSS_CLASSES
from .widget import Log1pexpExplorer

__all__ = [
    "CSS_CLASSES",
    "DEFAULT_QUANTITY",
    "DEFAULT_READOUT_X",
    "DEFAULT_X_RANGE",
    "DTYPES",
    "FIGURE_SIZE",
    "METHODS",
    "QUANTITIES",
    "WIDGET_DPI",
    "X_BOUNDS",
    "X_STEPS",
    "ExplorerFigure",
    "ExplorerState",
    "Table",
    "explorer_table",
    "Log1pexpExplorer",
    "PlottedSeries",
    "ReadoutValues",
    "plotted_series",
    "readout_values",
    "render_png",
]
