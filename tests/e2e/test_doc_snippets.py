"""Every python and bash snippet of the README and docs/ runs as written (see tests/snippets.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import snippets
from tests.snippets import Snippet

ALL = snippets.collect()
UNIT = snippets.single("run")
UNIT_PAGES = snippets.walkthroughs("run")


def test_every_snippet_is_run_or_marked_illustration_with_a_reason() -> None:
    assert ALL, "no snippets found in README.md"
    bad = [msg for s in ALL if (msg := snippets.problems(s)) is not None]
    assert not bad, "\n".join(bad)


def test_markers_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (
        "```python\nprint(1)\n```\n\n<!-- snippet: integration -->\n```bash\necho hi\n```\n"
        "<!-- snippet: illustration — needs a GPU -->\n\n```py\nx = 1\n```\n"
        "<!-- snippet: illustration -->\n```sh\nfalse\n```\n```yaml\na: 1\n```\n"
        "<!-- snippet: maybe -->\n```python\npass\n```\n"
    )
    fake = tmp_path / "README.md"
    fake.write_text(text)
    monkeypatch.setattr(snippets, "ROOT", tmp_path)
    parsed = snippets.parse(fake)
    assert [(s.line, s.lang, s.kind, s.reason) for s in parsed] == [
        (1, "python", "run", ""),
        (6, "bash", "integration", ""),
        (11, "python", "illustration", "needs a GPU"),
        (15, "bash", "illustration", ""),
        (22, "python", "maybe", ""),
    ]
    assert [snippets.problems(s) is None for s in parsed] == [True, True, True, False, False]
    assert "README.md:15" in str(snippets.problems(parsed[3]))


def test_a_failing_snippet_is_named_with_file_line_and_cause(tmp_path: Path) -> None:
    bad = Snippet("docs/x.md", 42, "python", "print('ok')\nundefined_name\n", "run", "")
    with pytest.raises(AssertionError) as info:
        snippets.run(bad, tmp_path, {})
    message = str(info.value)
    assert "docs/x.md:42" in message
    assert "NameError: name 'undefined_name' is not defined" in message


def test_a_snippet_that_is_not_idempotent_is_reported(tmp_path: Path) -> None:
    growing = Snippet(
        "README.md",
        7,
        "python",
        "from pathlib import Path\np = Path('n.txt')\n"
        "p.write_text(p.read_text() + 'x' if p.exists() else 'x')\nprint(p.read_text())\n",
        "run",
        "",
    )
    with pytest.raises(AssertionError, match=r"README\.md:7.*second time"):
        snippets.run(growing, tmp_path, {})


@pytest.fixture(scope="module")
def wire_env() -> Iterator[dict[str, str]]:
    with snippets.wire_environment() as env:
        yield env


@pytest.mark.parametrize("snippet", UNIT, ids=[s.where for s in UNIT])
def test_snippet_runs_as_written(
    snippet: Snippet, tmp_path: Path, wire_env: dict[str, str]
) -> None:
    snippets.run(snippet, tmp_path, wire_env)


def test_walkthroughs_run_as_written(tmp_path: Path, wire_env: dict[str, str]) -> None:
    for number, (page, steps) in enumerate(sorted(UNIT_PAGES.items())):
        snippets.run_walkthrough(steps, tmp_path / str(number), wire_env)
        assert page


def test_a_walkthrough_carries_exports_and_names_the_failing_step(tmp_path: Path) -> None:
    steps = [
        Snippet("docs/w.md", 3, "bash", "export GREETING=hello\n", "run", "", True),
        Snippet("docs/w.md", 9, "python", "print('between')\n", "run", "", True),
        Snippet("docs/w.md", 12, "bash", "echo never", "illustration", "no", True),
        Snippet("docs/w.md", 20, "bash", 'test "$GREETING" = hello\nfalse\n', "run", "", True),
    ]
    with pytest.raises(AssertionError, match=r"docs/w\.md:20: .*step 3 of 3"):
        snippets.run_walkthrough(steps, tmp_path, {})
