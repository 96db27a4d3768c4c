"""MarsRAG: retrieval assistants on CrewAI whose answers follow the Loop Contract.

The package root stays import-light on purpose: ``marsrag validate``, ``schema`` and ``lint`` must start
fast, so CrewAI and SQLAlchemy are only imported by the modules that run crews or touch the store.
"""

from marsrag._version import __version__

__all__ = ["__version__"]
