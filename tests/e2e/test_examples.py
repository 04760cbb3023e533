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
