"""The documentation's code blocks, collected and run exactly as written.

Every fenced ```python and ```bash block of README.md and docs/*.md is a snippet. The line
before a block (blank lines skipped) may say how the test suite treats it::

    <!-- snippet: integration -->                 needs a server: run in the integration stage
    <!-- snippet: illustration — why not run -->  never run; the reason is required

Unmarked snippets run in the unit stage. Each runs in a fresh folder holding a copy of the
repository's ``pywrapai.yaml`` and ``examples/`` and a ``.venv`` link to the test's virtual
environment, with ``TMPDIR`` inside that folder, the provider SDKs' environment variables
pointing at the local wire servers, and ``pip`` unable to download anything. A snippet that
leaves files behind is run a second time in the same folder: it must succeed again, and a
Python snippet must print the same thing, durations aside (re-running a snippet is
idempotent).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from pywrapai_graph.testing.wire import AnthropicWire, GeminiWire, OllamaWire, OpenAIWire

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
KINDS = ("run", "integration", "illustration")
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")
_MARKER = re.compile(r"<!--\s*snippet:\s*(?P<kind>[\w-]+)\s*(?:[—–:-]+\s*(?P<reason>.*?))?\s*-->")
_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|seconds)\b")
#: what a wire server answers to every chat call of a snippet
WIRE_REPLY = "This is the local wire server answering."
_TIMEOUT = 180


@dataclass(frozen=True, slots=True)
class Snippet:
    """One fenced code block of a document."""

    file: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    lang: str  # "python" or "bash"
    code: str
    kind: str  # "run", "integration", "illustration", or an unknown word (a test fails)
    reason: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def documents() -> list[Path]:
    """README.md and every docs/*.md."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def parse(path: Path) -> list[Snippet]:
    """The python and bash snippets of one Markdown file, with their markers."""
    snippets: list[Snippet] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    rel = path.relative_to(ROOT).as_posix()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, lang = opening["fence"], opening["lang"].lower()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        if lang in LANGUAGES:
            kind, reason = _marker(lines, i)
            code = "\n".join(lines[i + 1 : end]) + "\n"
            snippets.append(Snippet(rel, i + 1, LANGUAGES[lang], code, kind, reason))
        i = end + 1
    return snippets


def _marker(lines: list[str], fence_index: int) -> tuple[str, str]:
    j = fence_index - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    found = _MARKER.search(lines[j]) if j >= 0 else None
    if found is None:
        return "run", ""
    return found["kind"], (found["reason"] or "").strip()


def collect() -> list[Snippet]:
    """Every snippet of every document."""
    return [s for doc in documents() for s in parse(doc)]


def problems(snippet: Snippet) -> str | None:
    """Why a snippet's marker is unacceptable, or None."""
    if snippet.kind not in KINDS:
        return (
            f"{snippet.where}: unknown snippet marker {snippet.kind!r}; use "
            "'<!-- snippet: integration -->' or '<!-- snippet: illustration — reason -->'"
        )
    if snippet.kind == "illustration" and not snippet.reason:
        return (
            f"{snippet.where}: an illustration-only snippet must say why it is not run: "
            "'<!-- snippet: illustration — reason -->'"
        )
    return None


@contextmanager
def wire_environment() -> Iterator[dict[str, str]]:
    """The four providers' local wire servers, as the SDKs' environment variables."""
    with ExitStack() as stack:
        openai = stack.enter_context(OpenAIWire())
        anthropic = stack.enter_context(AnthropicWire())
        gemini = stack.enter_context(GeminiWire())
        ollama = stack.enter_context(OllamaWire())
        for wire in (openai, anthropic, gemini, ollama):
            wire.reply(*[WIRE_REPLY] * 200)
        yield {
            "OPENAI_API_KEY": "sk-test-snippets",
            "OPENAI_BASE_URL": openai.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-test-snippets",
            "ANTHROPIC_BASE_URL": anthropic.url,
            "GOOGLE_API_KEY": "test-snippets",
            "GOOGLE_GEMINI_BASE_URL": gemini.url,
            "OLLAMA_HOST": ollama.url,
        }


def repository_copy(base: Path) -> Path:
    """A folder like the repository's for a user: ``pywrapai.yaml``, ``examples/``, ``.venv``."""
    work = base / "work"
    work.mkdir()
    shutil.copy2(ROOT / "pywrapai.yaml", work / "pywrapai.yaml")
    shutil.copytree(
        ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("__pycache__")
    )
    (work / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    (work / "tmp").mkdir()
    return work


def _environment(work: Path, extra: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYWRAPAI_")}
    env.update(extra)
    env["PATH"] = f"{Path(sys.prefix) / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)  # this checkout, whatever the venv's install points at
    env["TMPDIR"] = str(work / "tmp")
    env["PIP_NO_INDEX"] = "1"  # pip may check what is installed, never download or upgrade
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _state(work: Path) -> set[str]:
    return {str(p.relative_to(work)) for p in work.rglob("*") if ".venv" not in p.parts}


def _execute(
    snippet: Snippet, script: Path, work: Path, env: dict[str, str]
) -> tuple[int, str, str]:
    command = (
        [sys.executable, str(script)]
        if snippet.lang == "python"
        else ["bash", "-e", "-o", "pipefail", str(script)]
    )
    try:
        done = subprocess.run(
            command,
            check=False,
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        out, err = (v.decode(errors="replace") if v else "" for v in (exc.stdout, exc.stderr))
        return -1, out, f"timed out after {_TIMEOUT} s\n{err}"
    return done.returncode, done.stdout, done.stderr


def _untimed(output: str) -> str:
    """``output`` with durations such as ``in 0.85s`` blanked: they differ on every run."""
    return _DURATION.sub("<time>", output)


def _tail(text: str, lines: int = 40) -> str:
    kept = text.strip().splitlines()[-lines:]
    return "\n".join("    " + line for line in kept) or "    (nothing)"


def failure(snippet: Snippet, what: str, result: tuple[int, str, str]) -> str:
    """A message that names the snippet (file:line) and shows why it failed."""
    code, out, err = result
    return (
        f"\n{snippet.where}: the ```{snippet.lang} snippet {what} (exit {code}).\n"
        f"Run as written in a fresh folder (see tests/snippets.py); fix the snippet or mark it "
        f"'<!-- snippet: illustration — reason -->'.\n"
        f"--- snippet\n{_tail(snippet.code, 60)}\n--- stdout\n{_tail(out)}\n--- stderr\n{_tail(err)}"
    )


def run(snippet: Snippet, base: Path, extra_env: Mapping[str, str]) -> str:
    """Run ``snippet`` as written; returns its output. Raises AssertionError naming it."""
    work = repository_copy(base)
    script = base / ("snippet.py" if snippet.lang == "python" else "snippet.sh")
    script.write_text(snippet.code, encoding="utf-8")
    env = _environment(work, extra_env)
    before = _state(work)
    first = _execute(snippet, script, work, env)
    if first[0] != 0:
        raise AssertionError(failure(snippet, "failed", first))
    if _state(work) != before:  # it wrote files: running it again must work the same
        second = _execute(snippet, script, work, env)
        if second[0] != 0:
            raise AssertionError(failure(snippet, "failed when run a second time", second))
        if snippet.lang == "python" and _untimed(second[1]) != _untimed(first[1]):
            raise AssertionError(
                failure(
                    snippet,
                    "printed something else when run a second time (is it idempotent? use "
                    "stable document ids)",
                    (second[0], f"first run:\n{first[1]}\nsecond run:\n{second[1]}", second[2]),
                )
            )
    return first[1]
