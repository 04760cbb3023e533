"""The fast target's list: written from a durations report, read back as marks."""

from __future__ import annotations

import pytest

from scripts.slow_tests import slow_tests

REPORT = """
============================ slowest durations =============================
1.20s call     tests/unit/test_a.py::test_slow
0.20s setup    tests/unit/test_a.py::test_split[x]
0.15s call     tests/unit/test_a.py::test_split[x]
0.10s call     tests/unit/test_a.py::test_quick
(3 durations < 0.005s hidden.  Use -vv to show these durations.)
"""


def test_setup_call_and_teardown_add_up_against_the_threshold() -> None:
    assert slow_tests(REPORT, 0.3) == [
        "tests/unit/test_a.py::test_slow",
        "tests/unit/test_a.py::test_split[x]",
    ]
    assert slow_tests(REPORT, 1.0) == ["tests/unit/test_a.py::test_slow"]


def test_the_listed_tests_are_marked_slow(request: pytest.FixtureRequest) -> None:
    session = request.session
    marked = [item.nodeid for item in session.items if item.get_closest_marker("slow")]
    listed = "tests/unit/test_chunker_hostile.py::test_many_splits_hold_no_references_and_no_memory"
    if any(item.nodeid == listed for item in session.items):
        assert listed in marked
    assert request.node.get_closest_marker("slow") is None
