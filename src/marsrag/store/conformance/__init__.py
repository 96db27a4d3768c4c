"""The RunStore conformance kit: the suite any :class:`marsrag.store.RunStore` implementation must pass.

Subclass :class:`RunStoreConformance` in a test module (named ``Test...``), override its ``store`` fixture to
yield a fresh, empty, open store, and pytest runs every test on it (``tests/store/test_conformance.py`` does it
for SQLite and PostgreSQL)::

    from marsrag.store.conformance import RunStoreConformance

    class TestMyStore(RunStoreConformance):
        @pytest.fixture
        def store(self, tmp_path):
            with MyStore(tmp_path) as opened:
                yield opened

The records it stores come from :mod:`marsrag.store.conformance.records`. Imports pytest: only tests import it.
"""

from __future__ import annotations

from marsrag.store.conformance.suite import RunStoreConformance, in_threads

__all__ = ["RunStoreConformance", "in_threads"]
