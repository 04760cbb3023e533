"""A real MCP server for the tests, written with the ``mcp`` SDK's server side (MCPServer).

    python tests/integration/mcp_server.py                 # stdio
    python tests/integration/mcp_server.py --http TOKEN    # streamable HTTP on a free port

Over HTTP it prints ``PORT <n>`` once listening and answers only requests that carry
``Authorization: Bearer TOKEN``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

app = MCPServer("pywrapai-test")
#: calls of ``hang`` and ``pause`` running now, and the most ``pause`` calls at once
_state = {"hanging": 0, "pausing": 0, "peak": 0}
#: the pipe to the client: stdout as the server started
_WIRE = os.fstat(1).st_ino
#: with ``--stubborn MARKER``: MARKER
_stubborn: list[str] = []


class Point(BaseModel):
    x: float
    y: float


@app.tool()
def add(a: int, b: int = 2) -> int:
    """Add two integers."""
    return a + b


@app.tool()
def describe(p: Point, unit: Literal["m", "cm"] = "m", note: str | None = None) -> str:
    """Describe a point."""
    return f"({p.x:g}, {p.y:g}) {unit}" + (f" {note}" if note else "")


@app.tool()
def refuse(city: str) -> str:
    """Fail with a message for the model."""
    raise ToolError(f"no weather station in {city}")


@app.tool()
def crash() -> str:
    """Raise an unexpected exception."""
    raise RuntimeError("internal state broken")


@app.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@app.tool()
def die() -> str:
    """Kill this server's process (SIGKILL) in the middle of the call."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


@app.tool()
def hangup() -> str:
    """Close this server's stdout (its client sees the connection end) and stay alive; with
    ``--stubborn MARKER`` (SIGTERM ignored) MARKER is created once the client closed stdin."""
    threading.Thread(target=_outlive_the_client).start()  # not a daemon: outlives main
    for name in os.listdir("/proc/self/fd"):  # the SDK writes to a duplicate of stdout
        with contextlib.suppress(OSError):
            if os.fstat(int(name)).st_ino == _WIRE:
                os.close(int(name))
    return "unreachable"


def _outlive_the_client() -> None:
    while os.read(0, 65536):  # until the client closes our stdin: its shutdown has begun
        pass
    if _stubborn:
        Path(_stubborn[0]).touch()
    time.sleep(60)


@app.tool()
async def hang() -> str:
    """Never return (until the client cancels the call)."""
    _state["hanging"] += 1
    try:
        await anyio.sleep(3600)
    finally:
        _state["hanging"] -= 1
    return "unreachable"


@app.tool()
async def pause(seconds: float) -> float:
    """Sleep, then return the seconds slept."""
    _state["pausing"] += 1
    _state["peak"] = max(_state["peak"], _state["pausing"])
    try:
        await anyio.sleep(seconds)
    finally:
        _state["pausing"] -= 1
    return seconds


@app.tool()
def counters() -> dict[str, int]:
    """Calls of hang running now, and the most pause calls that ran at once."""
    return {"hanging": _state["hanging"], "peak": _state["peak"]}


@app.tool()
def big(size: int) -> str:
    """Return ``size`` characters."""
    return "x" * size


def _serve_http(token: str) -> None:
    import uvicorn

    inner = app.streamable_http_app()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await inner(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)  # connections wait in the backlog until the server accepts them
    config = uvicorn.Config(guarded, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        _serve_http(sys.argv[2])
    else:
        if len(sys.argv) == 3 and sys.argv[1] == "--stubborn":
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            _stubborn.append(sys.argv[2])
        app.run()
