"""The version of gen, in one place: the package, ``gen --version`` and the wheel read it."""

__version__ = "0.1.0"
