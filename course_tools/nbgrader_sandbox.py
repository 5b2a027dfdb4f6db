"""nbgrader's autograde, with every learner's notebook run contained.

The ``nbgrader_config.py`` that :mod:`course_tools.nbgrader_export` writes puts
:class:`SandboxedExecute` in the place of nbgrader's own ``Execute`` step of
``nbgrader autograde``, so that each submission's kernel is started by
:class:`course_tools.sandbox.SandboxedKernelManager`: in the sandbox where there is one,
within resource limits everywhere, in a temporary copy of its working folder. Imported
only by nbgrader (this module needs nbgrader, which the course's environment lacks).
"""

from __future__ import annotations

from nbgrader.converters import Autograde
from nbgrader.preprocessors import Execute

from .sandbox import SandboxedKernelManager
from .sandbox import announcement


class SandboxedExecute(Execute):
    """nbgrader's ``Execute``, with kernels started by :class:`SandboxedKernelManager`."""

    def __init__(self, *args, **kwargs):
        # nbgrader's own Execute names its kernel manager as an argument, which config
        # cannot override; this one names the sandboxed one first.
        kwargs.setdefault("kernel_manager_class", SandboxedKernelManager)
        super().__init__(*args, **kwargs)

    def preprocess(self, nb, resources=None, km=None):
        manager = SandboxedKernelManager(config=self.config)  # its settings, no kernel
        self.log.info(announcement(manager.limits, sandboxed=manager.sandboxed))
        return super().preprocess(nb, resources, km)


def autograde_steps() -> list:
    """nbgrader's autograde steps, with :class:`SandboxedExecute` for ``Execute``."""
    steps = Autograde.class_traits()["autograde_preprocessors"].default()
    return [SandboxedExecute if step is Execute else step for step in steps]
