"""Fuzz suite setup: one bounded, derandomized hypothesis profile, and the web fixtures of tests/web.

Every fuzz test runs a fixed number of examples drawn from a fixed seed, so CI sees the same cases on every
run; ``HYPOTHESIS_PROFILE=deep`` does not apply here (raise ``max_examples`` locally to dig further).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

from tests.web.conftest import Site, site, site_factory

__all__ = ["Site", "fuzz", "site", "site_factory"]


def fuzz(max_examples: int) -> settings:
    """Settings for one fuzz target: ``max_examples`` cases, derandomized, no deadline, no example database."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        # The inputs are large on purpose, and fixtures (a temp dir, an app) are shared across examples.
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
            HealthCheck.function_scoped_fixture,
        ],
    )
