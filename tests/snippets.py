"""The documentation's code blocks, collected and run exactly as written.

Every fenced ```python and ```bash block of README.md and of the site's pages (docs/**/*.md)
is a snippet. The line before a block (blank lines skipped) may say how the test suite treats it::

    <!-- snippet: integration -->                 needs a server: run in the integration stage
    <!-- snippet: illustration — why not run -->  never run; the reason is required

A page that contains ``<!-- snippets: sequence -->`` is a walk-through: its snippets run in
order in one folder, as one shell session (variables a bash step exports reach the later
steps), in the integration stage when any step is marked so. Unmarked snippets run in the
unit stage. Each runs in a fresh folder holding a copy of the
repository's ``pywrapai.yaml`` and ``examples/`` and a ``.venv`` link to the test's virtual
environment, with ``TMPDIR`` inside that folder, the provider SDKs' environment variables
pointing at the local wire servers, and ``pip`` unable to download anything. A snippet that
leaves files behind is run a second time in the same folder: it must succeed again, and a
Python snippet must print the same thing, durations aside (re-running a snippet is
idempotent).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from pywrapai_graph.testing.wire import (
    AnthropicWire,
    CohereWire,
    GeminiWire,
    OllamaWire,
    OpenAIWire,
)

ROOT = Path(__file__).resolve().parents[1]
LANGUAGES = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
KINDS = ("run", "integration", "illustration")
_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)\s*(?P<lang>[\w+-]*)")
_SEQUENCE = re.compile(r"<!--\s*snippets:\s*sequence\s*-->")
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
    sequence: bool = False  # one step of a walk-through page

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def documents() -> list[Path]:
    """README.md and every page of the documentation site (docs/**/*.md)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def parse(path: Path) -> list[Snippet]:
    """The python and bash snippets of one Markdown file, with their markers."""
    snippets: list[Snippet] = []
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    rel = path.relative_to(ROOT).as_posix()
    sequence = _SEQUENCE.search(text) is not None
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
            snippets.append(Snippet(rel, i + 1, LANGUAGES[lang], code, kind, reason, sequence))
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


def single(kind: str) -> list[Snippet]:
    """The snippets of ``kind`` that run on their own (not steps of a walk-through)."""
    return [s for s in collect() if s.kind == kind and not s.sequence]


def walkthroughs(stage: str) -> dict[str, list[Snippet]]:
    """The walk-through pages of a stage ("run" or "integration"), steps in order."""
    pages: dict[str, list[Snippet]] = {}
    for s in collect():
        if s.sequence:
            pages.setdefault(s.file, []).append(s)
    return {
        page: steps
        for page, steps in pages.items()
        if any(s.kind == "integration" for s in steps) == (stage == "integration")
    }


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
    """The providers' local wire servers, as the SDKs' environment variables."""
    with ExitStack() as stack:
        openai = stack.enter_context(OpenAIWire())
        anthropic = stack.enter_context(AnthropicWire())
        gemini = stack.enter_context(GeminiWire())
        ollama = stack.enter_context(OllamaWire())
        cohere = stack.enter_context(CohereWire())
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
            "CO_API_KEY": "co-test-snippets",
            "CO_API_URL": cohere.url,
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
    snippet: Snippet, script: Path, work: Path, env: dict[str, str], env_out: Path | None = None
) -> tuple[int, str, str]:
    """Run one snippet; whatever it left running in the background is stopped after. With
    ``env_out``, a bash snippet's final environment is written there (NUL-separated)."""
    if snippet.lang == "python":
        command = [sys.executable, str(script)]
    elif env_out is None:
        command = ["bash", "-e", "-o", "pipefail", str(script)]
    else:  # as in one shell session: what the step exports reaches the next steps
        source = '. "$1"; env -0 > "$2"'
        command = ["bash", "-e", "-o", "pipefail", "-c", source, "bash", str(script), str(env_out)]
    proc = subprocess.Popen(
        command,
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=_TIMEOUT)
    except subprocess.TimeoutExpired:
        _stop_group(proc.pid)
        out, err = proc.communicate()
        return -1, out, f"timed out after {_TIMEOUT} s\n{err}"
    _stop_group(proc.pid)
    return proc.returncode, out, err


def _stop_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read_env(path: Path) -> dict[str, str]:
    pairs = (item.partition("=") for item in path.read_text().split("\0") if "=" in item)
    return {k: v for k, _, v in pairs if k not in ("PWD", "OLDPWD", "SHLVL", "_")}


def run_walkthrough(steps: list[Snippet], base: Path, extra_env: Mapping[str, str]) -> list[str]:
    """Run a walk-through page's steps in order in one folder, as one shell session;
    returns what each step printed.

    Raises:
        AssertionError: naming the first step that failed (file:line).
    """
    work = repository_copy(base)
    env = _environment(work, extra_env)
    runnable = [s for s in steps if s.kind != "illustration"]
    outputs = []
    for number, step in enumerate(runnable, 1):
        script = base / f"step{number}.{'py' if step.lang == 'python' else 'sh'}"
        script.write_text(step.code, encoding="utf-8")
        env_out = base / f"step{number}.env" if step.lang == "bash" else None
        result = _execute(step, script, work, env, env_out)
        if result[0] != 0:
            what = f"failed (step {number} of {len(runnable)}; the steps before it ran first)"
            raise AssertionError(failure(step, what, result))
        if env_out is not None and env_out.exists():
            env = _read_env(env_out)
        outputs.append(result[1])
    return outputs


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
