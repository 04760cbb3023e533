"""CPU cost of one ``Agent.run`` with a scripted model: no tools, and one tool call.

CPU time (``time.process_time``), best of 7 rounds of 2000 runs; compare two commits by
running this in each (the figures move with the machine's load, so alternate the runs).

Run: .venv/bin/python -m benchmarks.agent_loop
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pywrapai_graph import LLM, Agent, GraphLLM, ToolCall, ToolRegistry, tool
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"16°C in {city}"


def _cpu_per_call(fn: Callable[[], object], number: int, rounds: int = 7) -> float:
    """Best CPU time (``time.process_time``) per call, in seconds."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - start) / number)
    return best


def _agent(replies: Callable[[], list[ScriptedReply | str]]) -> Callable[[], object]:
    registry = ToolRegistry()
    registry.register(get_weather)
    fake = ScriptedChatModel(respond=lambda _request: "unused")
    agent = Agent(GraphLLM(llm=LLM(provider=fake)), registry)

    def run() -> object:
        fake.add(*replies())
        return agent.run("Weather in Paris?")

    return run


def main() -> None:
    call = ToolCall("c1", "get_weather", {"city": "Paris"})
    cases = {
        "Agent.run, no tool call": _agent(lambda: ["Sunny."]),
        "Agent.run, one tool call": _agent(
            lambda: [ScriptedReply(tool_calls=[call]), "16°C in Paris."]
        ),
    }
    print(f"\n{'case':<40} {'µs CPU per run':>16}")
    for label, run in cases.items():
        run()
        print(f"{label:<40} {_cpu_per_call(run, 2000) * 1e6:>16.1f}")


if __name__ == "__main__":
    main()
