"""The ``pytest11`` entry point of pywrapai-graph: off unless you ask for its fixtures.

It adds one ini option and one flag; with ``pywrapai_fixtures = true`` (or
``--pywrapai-fixtures``) it loads :mod:`pywrapai_graph.testing.pytest_plugin`. Nothing of
pywrapai-graph is imported otherwise, so installing the package leaves your test runs as
they were. Kept outside the package so that an older copy of ``pywrapai_graph`` earlier on
``sys.path`` cannot make pytest fail to start.
"""

from __future__ import annotations

import pytest

PLUGIN = "pywrapai_graph.testing.pytest_plugin"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "pywrapai_fixtures",
        type="bool",
        default=False,
        help=f"load pywrapai-graph's real-server fixtures ({PLUGIN})",
    )
    parser.getgroup("pywrapai-graph").addoption(
        "--pywrapai-fixtures",
        action="store_true",
        default=False,
        help=f"load pywrapai-graph's real-server fixtures ({PLUGIN})",
    )


def pytest_configure(config: pytest.Config) -> None:
    wanted = config.getoption("pywrapai_fixtures") or config.getini("pywrapai_fixtures")
    if wanted and not config.pluginmanager.has_plugin(PLUGIN):
        config.pluginmanager.import_plugin(PLUGIN)
