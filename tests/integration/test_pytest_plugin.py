"""The testing guide's pytest file for a team, run with pytester: the shipped plugin's PostgreSQL
fixture under the vector-store contract suite, its emptied-store fixture, and its wire-server
fixture."""

from __future__ import annotations

import pytest

from tests import snippets

pytestmark = pytest.mark.integration


def _readme_test_file() -> str:
    found = [
        s
        for s in snippets.parse(snippets.ROOT / "docs" / "testing.md")
        if "test_pytest_plugin.py" in s.reason
    ]
    assert len(found) == 1, "the testing guide's pytest example for the plugin is gone"
    return found[0].code


def test_a_team_runs_the_contract_suite_on_the_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, pg_url: str
) -> None:
    code = _readme_test_file()
    conftest = code.splitlines()[0].removeprefix("# conftest.py: ")
    assert conftest == 'pytest_plugins = ["pywrapai_graph.testing.pytest_plugin"]'
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_ours=code)
    monkeypatch.setenv("PYWRAPAI_TEST_PG_URL", pg_url)  # this session's server, not a second
    # a slice of the contract (it all runs on PGVectorStore in test_server_stores.py)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-v", "-k",
        "reopen or replace or filter or reaches_the_model or empty",
    )  # fmt: skip
    passed = int(result.parseoutcomes().get("passed", 0))
    result.assert_outcomes(passed=passed)  # and nothing failed, errored or skipped
    assert passed >= 10, result.stdout.str()
    # both add rows to one table: the second passes only if it was emptied in between
    result.stdout.fnmatch_lines(
        ["*test_each_test_starts_from_an_empty_table?1? PASSED*", "*empty_table?2? PASSED*"]
    )
