"""The package version, read by the build backend and by ``marsrag --version``."""

__version__ = "0.1.0"
