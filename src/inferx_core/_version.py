"""Single source of the core's version (read by pyproject and `inferx --version`)."""

__version__ = "0.1.0"
