"""Shared test configuration."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# The real-server fixtures (pywrapai_pg_url, ...) that the package ships to its users; the
# integration tests' pg_url, chroma_url and qdrant_url stand on them.
pytest_plugins = ["pytester", "pywrapai_graph.testing.pytest_plugin"]

# Shared, noisy machines: no per-example deadline; CI runs a few more examples.
settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "ci", deadline=None, max_examples=200, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else "default")


_SLOW = Path(__file__).with_name("slow_tests.txt")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``slow`` the tests measured slow (``tests/slow_tests.txt``): the fast target
    (``bash scripts/fast.sh``) leaves them out; the full suite runs them all."""
    slow = {
        line.strip()
        for line in _SLOW.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    for item in items:
        if item.nodeid in slow:
            item.add_marker(pytest.mark.slow)
