"""The reference's examples, unchanged, against local wire servers via the SDK environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pywrapai import TokenUsage, ToolCall
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.wire import AnthropicWire

ROOT = Path(__file__).resolve().parents[2]


def run_example(name: str, wire: AnthropicWire) -> str:
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": wire.url}
    return subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=60,
    ).stdout


def test_full_tool_calling_flow_runs_unchanged() -> None:
    with AnthropicWire() as wire:
        wire.reply(
            ScriptedReply(tool_calls=[ToolCall("toolu_1", "get_weather", {"city": "London"})]),
            "The weather in London is 16°C and cloudy.",
        )
        out = run_example("reference_tool_calling.py", wire)
        assert out.splitlines() == [
            "['get_weather', 'search_docs']",
            "2",
            "16°C, cloudy in London",
            "The weather in London is 16°C and cloudy.",
        ]
        second = wire.requests[1].json
        assert second["messages"][-1]["content"][0]["tool_use_id"] == "toolu_1"


def test_streaming_example_runs_unchanged() -> None:
    with AnthropicWire() as wire:
        wire.reply(ScriptedReply("Once upon a time...", usage=TokenUsage(11, 22)))
        out = run_example("reference_streaming.py", wire)
        assert out.splitlines() == ["Once upon a time...", "11 22"]
        assert wire.requests[0].json["stream"] is True
