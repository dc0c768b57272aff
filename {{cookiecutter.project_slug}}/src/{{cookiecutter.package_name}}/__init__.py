"""Shared code behind the notebooks: every notebook cell calls into this package."""

__version__ = "0.1.0"
