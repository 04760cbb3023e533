"""Shared test configuration."""

from __future__ import annotations

import os

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
