"""The reference's examples, unchanged, against local wire servers via the SDK environment."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pywrapai import TokenUsage, ToolCall
from pywrapai_graph.testing import ScriptedReply
from pywrapai_graph.testing.wire import AnthropicWire, OpenAIWire

ROOT = Path(__file__).resolve().parents[2]


def run_example(name: str, wire: AnthropicWire | OpenAIWire) -> str:
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "test-key",
        "ANTHROPIC_BASE_URL": wire.url,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_BASE_URL": wire.base_url,
    }
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


def test_prompt_versioning_example() -> None:
    with AnthropicWire() as wire:
        wire.reply(
            ScriptedReply("v1 answer", usage=TokenUsage(1000, 100)),
            ScriptedReply("v2 answer", usage=TokenUsage(2000, 100)),
        )
        out = run_example("reference_prompt_versioning.py", wire).splitlines()
        assert out[0] == "['support-agent-v1.txt', 'support-agent-v2.txt']"
        assert out[1:3] == ["v1 answer", "v2 answer"]
        assert out[3] == "support-agent-v1.txt: $0.001500"
        assert out[4] == "support-agent-v2.txt: $0.002500"
        assert wire.requests[0].json["system"].startswith("You are a friendly and professional")
        assert wire.requests[1].json["system"].startswith("You are Acme Corp's support agent")


def test_full_rag_example() -> None:
    with OpenAIWire() as wire:
        wire.reply(
            ScriptedReply(
                "The capital of France is Paris, founded in 987 AD.", usage=TokenUsage(300, 20)
            ),
            ScriptedReply("You're welcome!", usage=TokenUsage(10, 5)),
        )
        out = run_example("reference_rag.py", wire).splitlines()
        assert out[0] == "The capital of France is Paris, founded in 987 AD."
        assert float(out[1]) > 0  # embeddings cost, from the exact token counts
        assert float(out[2]) == pytest.approx((310 * 0.15 + 25 * 0.60) / 1e6)
        chats = [r for r in wire.requests if r.path.endswith("/chat/completions")]
        assert "<context>" in chats[0].json["messages"][-1]["content"]
        assert chats[1].json["messages"][-1]["content"] == "Thank you!"


def test_full_agent_example() -> None:
    with OpenAIWire() as wire:
        wire.reply(
            ScriptedReply(
                tool_calls=[ToolCall("call_1", "get_weather", {"city": "London"})],
                usage=TokenUsage(100, 10),
            ),
            ScriptedReply("It is 16°C and cloudy in London.", usage=TokenUsage(150, 12)),
        )
        out = run_example("reference_agent.py", wire).splitlines()
        assert out[0] == "  [1] called get_weather({'city': 'London'})"
        assert out[1] == "It is 16°C and cloudy in London."
        assert out[2].startswith("Turns: 2  Cost: $0.0000")
