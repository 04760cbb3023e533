"""The README's main job runs as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_main_job(store: Path, *question: str) -> str:
    env = {**os.environ, "PYWRAPAI_STORE": str(store)}
    env.pop("PYWRAPAI_PROVIDER", None)
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "main_job.py"), *question],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return out.stdout


def test_main_job_ingests_and_shows_assembled_messages(tmp_path: Path) -> None:
    store = tmp_path / "kb.db"
    first = run_main_job(store, "How long do refunds take?")
    assert "[SYSTEM]\nYou are Acme Corp's support agent." in first
    assert "<context>\n[1] " in first
    assert "Question: How long do refunds take?" in first
    assert "returns-policy.md" in first
    assert "set PYWRAPAI_PROVIDER" in first
    stored = first.splitlines()[0]
    # idempotent: the same documents again add nothing new
    assert run_main_job(store).splitlines()[0] == stored


def test_agent_example_runs_offline() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "agent_example.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "[1] search_knowledge_base({'query': 'warehouse'})" in out
    assert "[2] get_weather({'city': 'Lyon'})" in out
    assert "Lyon warehouse" in out
    assert "turns=3 steps=2" in out


def test_readme_main_job_commands(tmp_path: Path) -> None:
    """The README's first command (after setup): ingest the bundled docs, then ask."""
    readme = (ROOT / "README.md").read_text()
    line = next(
        ln
        for ln in readme.splitlines()
        if ln.startswith("bash scripts/setup.sh && .venv/bin/pywrapai-graph ingest")
    )
    commands = [c.strip().split() for c in line.split("&&")[1:]]
    env = {**os.environ, "PYWRAPAI_STORE__PATH": str(tmp_path / "store.db")}
    env.pop("PYWRAPAI_LLM__PROVIDER", None)
    script = Path(sys.executable).parent / "pywrapai-graph"
    outputs = []
    for argv in commands:
        assert argv[0] == ".venv/bin/pywrapai-graph"
        args = [a.strip('"') for a in argv[1:]]
        if args[0] == "ask":
            args = ["ask", "--show-messages", " ".join(args[2:])]
        done = subprocess.run(
            [str(script), *args], cwd=ROOT, env=env, capture_output=True, text=True, check=True
        )
        outputs.append(done.stdout)
    assert "4 chunks added" in outputs[0]
    assert "Question: How long do refunds take?" in outputs[1]
    # the bundled config embeds with the local semantic model: the answer's chunk comes first
    first_hit = outputs[1].split("<context>\n[1] ", 1)[1].split("\n[2] ", 1)[0]
    assert "Refunds are issued to the original payment method within 5 business days" in first_hit
    retrieved = next(ln for ln in outputs[1].splitlines() if ln.startswith("retrieved: "))
    assert retrieved.startswith("retrieved: returns-policy.md")


def test_observability_example_prints_a_genai_span() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "observability_console.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert '"name": "chat gpt-4o-mini"' in out
    assert '"gen_ai.operation.name": "chat"' in out
    assert '"gen_ai.usage.input_tokens": 10' in out
    assert "request cost $0.000005, 15 tokens" in out
