"""Shared code behind the notebooks: every notebook cell calls into this package."""

from . import quiet

__version__ = "0.1.0"

quiet.setup()  # before any module of the package loads TensorFlow (quiet.py says why)
