"""The package's version: a leaf that imports nothing, so any layer may read it."""

__all__ = ["__version__"]

__version__ = "0.1.0"
