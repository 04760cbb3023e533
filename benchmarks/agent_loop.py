"""CPU of one agent run with a scripted model, against one ``GraphLLM.chat`` in the same run.

Two runs: the model answers at once (one turn), or calls one tool first (two turns). The
rows: ``Agent.run``, and ``Agent.stream`` drained to its end.

Run: .venv/bin/python -m benchmarks.agent_loop
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from benchmarks._table import print_table
from pywrapai_graph import LLM, Agent, GraphLLM, ToolCall, ToolRegistry, tool
from pywrapai_graph.testing import ScriptedChatModel, ScriptedReply

CALL = ToolCall("call_1", "get_weather", {"city": "Paris"})


@tool
def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name.
    """
    return f"16°C in {city}"


def _replies(tools: bool) -> Callable[[object], ScriptedReply]:
    """A responder: a tool call when the last message is the user's (if ``tools``), else text."""

    def respond(request: object) -> ScriptedReply:
        last = request.messages[-1]  # type: ignore[attr-defined]
        if tools and last.role.value == "user":
            return ScriptedReply(tool_calls=[CALL])
        return ScriptedReply("It is 16°C in Paris.")

    return respond


def cpu_per_call(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    """Best CPU seconds per call (``time.process_time``) over ``repeat`` rounds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for _ in range(number):
            fn()
        best = min(best, (time.process_time() - start) / number)
    return best


def _drain(agent: Agent) -> None:
    for _ in agent.stream("Weather in Paris?"):
        pass


def main() -> None:
    registry = ToolRegistry()
    registry.register(get_weather)
    rows: list[tuple[str, float, float]] = []
    plain = GraphLLM(LLM(provider=ScriptedChatModel(respond=_replies(False))))
    anchor = cpu_per_call(lambda: plain.chat("Weather in Paris?"), 4000)
    rows.append(("GraphLLM.chat, one call (anchor)", anchor, 1.0))
    for tools, label in ((False, "no tool"), (True, "one tool call")):
        graph = GraphLLM(LLM(provider=ScriptedChatModel(respond=_replies(tools))))
        agent = Agent(graph, registry)
        number = 2000 if tools else 4000
        t_run = cpu_per_call(functools.partial(agent.run, "Weather in Paris?"), number)
        rows.append((f"Agent.run, {label}", t_run, t_run / anchor))
        t_stream = cpu_per_call(functools.partial(_drain, agent), number)
        rows.append((f"Agent.stream drained, {label}", t_stream, t_stream / anchor))
    print_table("CPU per agent run, scripted model (best of 5 rounds)", rows)


if __name__ == "__main__":
    main()
