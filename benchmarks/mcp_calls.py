"""MCP tool calls through the registry, as ratios to the SDK's own client (the floor).

One stdio server (examples/mcp_weather_server.py) per mode; each mode makes ``N`` calls of
``get_forecast`` one after another, best of 5 rounds, modes interleaved round by round:

- the ``mcp`` SDK's ``Client.call_tool`` awaited in one event loop (the anchor: the protocol
  round trip through a pipe to the server process, nothing of ours);
- ``ToolRegistry.aexecute`` in one event loop (argument check, span, size limit, and the
  hop to the session's own loop thread and back);
- ``ToolRegistry.execute`` from sync code (each call also runs its own ``asyncio.run``);
- 8 concurrent ``aexecute`` calls at a time (the session multiplexes them on one pipe).

Run: .venv/bin/python -m benchmarks.mcp_calls
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path

from mcp import Client, StdioServerParameters

from benchmarks._table import print_table
from pywrapai_graph import MCPToolServer, ToolCall, ToolRegistry

N = 200
ROUNDS = 5
SERVER = str(Path(__file__).resolve().parents[1] / "examples" / "mcp_weather_server.py")
ARGS = {"city": "Lyon"}


async def _sdk_rounds() -> list[float]:
    params = StdioServerParameters(command=sys.executable, args=[SERVER])
    times = []
    async with Client(params, mode="legacy") as client:
        for _ in range(ROUNDS):
            start = time.perf_counter()
            for _ in range(N):
                await client.call_tool("get_forecast", ARGS)
            times.append((time.perf_counter() - start) / N)
    return times


def _ours(registry: ToolRegistry) -> dict[str, float]:
    call = ToolCall("c", "get_forecast", ARGS)

    async def sequential() -> None:
        for _ in range(N):
            await registry.aexecute(call)

    async def concurrent() -> None:
        for _ in range(N // 8):
            await asyncio.gather(*(registry.aexecute(call) for _ in range(8)))

    def timed(run: Callable[[], object]) -> float:
        start = time.perf_counter()
        run()
        return (time.perf_counter() - start) / N

    best = {"async": float("inf"), "sync": float("inf"), "concurrent": float("inf")}
    for _ in range(ROUNDS):
        best["async"] = min(best["async"], timed(lambda: asyncio.run(sequential())))
        best["sync"] = min(best["sync"], timed(lambda: [registry.execute(call) for _ in range(N)]))
        best["concurrent"] = min(best["concurrent"], timed(lambda: asyncio.run(concurrent())))
    return best


def main() -> None:
    anchor = min(asyncio.run(_sdk_rounds()))
    with MCPToolServer("weather", command=sys.executable, args=[SERVER]) as server:
        registry = ToolRegistry()
        server.register(registry)
        ours = _ours(registry)
    rows = [
        ("mcp SDK Client.call_tool, one loop (anchor)", anchor, 1.0),
        ("ToolRegistry.aexecute, one loop", ours["async"], ours["async"] / anchor),
        ("ToolRegistry.execute, sync (asyncio.run each)", ours["sync"], ours["sync"] / anchor),
        ("ToolRegistry.aexecute, 8 at a time", ours["concurrent"], ours["concurrent"] / anchor),
    ]
    print_table(f"MCP tool call over stdio, per call ({N} calls, best of {ROUNDS})", rows)


if __name__ == "__main__":
    main()
