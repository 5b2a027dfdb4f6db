"""Helpers for the notebooks of *Gradients on tape*.

Importing this package does nothing but define names: TensorFlow is imported only
when a notebook calls :func:`setup_notebook` (lesson 00 introduces it), so the
log settings it makes can take effect before TensorFlow starts.
"""

from .notebook_setup import setup_notebook

__all__ = ["setup_notebook"]
__version__ = "0.1.0"
