"""A hostile MCP server over stdio, written with the ``mcp`` SDK's server side (MCPServer).

    python tests/integration/mcp_hostile_server.py           # stdio
    python tests/integration/mcp_hostile_server.py --http    # streamable HTTP, free port
    python tests/integration/mcp_hostile_server.py --http --json   # replies as JSON bodies

Its listing holds a small schema of repeated ``$ref``s that expands exponentially, and its
tools answer badly: a blocking sleep that stalls the whole server, a huge result, a
JSON-RPC error, and (over stdio) replies the SDK would never write (a line that is not
JSON, a reply with a wrong id, invalid UTF-8), written straight to the pipe by the tool.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

app = MCPServer("pywrapai-hostile")
#: the pipe to the client: stdout as the server started
_WIRE = os.fstat(1).st_ino
#: calls of ``linger`` running now (their seconds)
_lingering: list[float] = []
#: levels of the exponential schema: each level refers twice to the next one
DEPTH = 30


def exponential_schema(depth: int = DEPTH) -> dict[str, object]:
    """``depth`` definitions, each with two properties referring to the next one: a few KB
    that inline to 2**depth copies of the last."""
    defs: dict[str, object] = {f"L{depth}": {"type": "string"}}
    for level in range(depth):
        ref = {"$ref": f"#/$defs/L{level + 1}"}
        defs[f"L{level}"] = {"type": "object", "properties": {"a": ref, "b": ref}}
    return {
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/L0"}},
        "required": ["x"],
        "$defs": defs,
    }


def cyclic_schema() -> dict[str, object]:
    """A tree: a node's children are nodes (a legitimate recursive schema)."""
    node = {
        "type": "object",
        "properties": {
            "label": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        },
    }
    return {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": node},
    }


def _raw(reply: dict[str, object] | bytes) -> None:
    """Write one line to the client ourselves, on the pipe the SDK writes to (a duplicate
    of the stdout we started with: the SDK points fd 1 elsewhere)."""
    data = reply if isinstance(reply, bytes) else json.dumps(reply).encode() + b"\n"
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            if int(name) != 1 and os.fstat(int(name)).st_ino == _WIRE:
                os.write(int(name), data)
                return
    raise RuntimeError("the pipe to the client was not found")


@app.tool()
def echo(text: str) -> str:
    """Return the text."""
    return text


@app.tool()
def pid() -> int:
    """This server's process id."""
    return os.getpid()


@app.tool()
async def linger(seconds: float) -> str:
    """Sleep politely (a cancelled call stops here)."""
    _lingering.append(seconds)
    try:
        await anyio.sleep(seconds)
    finally:
        _lingering.remove(seconds)
    return "done"


@app.tool()
def lingering() -> int:
    """Calls of ``linger`` running now."""
    return len(_lingering)


@app.tool()
def exponential(x: object) -> str:
    """A tool whose listed schema expands exponentially."""
    return "unreachable"


@app.tool()
def tree(root: object) -> str:
    """A tool whose listed schema is recursive."""
    return json.dumps(root)


@app.tool()
async def stall(seconds: float) -> str:
    """Sleep without yielding to the event loop: the whole server stops answering."""
    time.sleep(seconds)
    return "late"


@app.tool()
def huge(megabytes: int) -> str:
    """Return ``megabytes`` MB of text."""
    return "x" * (megabytes * 1_000_000)


@app.tool()
def rpc_error() -> str:
    """Answer with a JSON-RPC error (code -32000, the generic server error)."""
    raise MCPError(code=-32000, message="the backend said no")


@app.tool()
async def not_json(ctx: Context) -> str:
    """Write a line that is not JSON, then never answer."""
    _raw(b"this is not JSON-RPC\n")
    await anyio.sleep(3600)
    return "unreachable"


@app.tool()
async def wrong_id(ctx: Context) -> str:
    """Answer with an id the client never sent, then never answer."""
    _raw({"jsonrpc": "2.0", "id": 987654, "result": {"content": [{"type": "text", "text": "?"}]}})
    await anyio.sleep(3600)
    return "unreachable"


@app.tool()
async def bad_unicode(ctx: Context) -> str:
    """Answer the call with bytes that are not UTF-8, then never answer properly."""
    head = json.dumps({"jsonrpc": "2.0", "id": ctx.request_id})[:-1].encode()
    _raw(head + b', "result": {"content": [{"type": "text", "text": "\xff\xfe\xc3"}]}}\n')
    await anyio.sleep(3600)
    return "unreachable"


app._tool_manager.get_tool("exponential").parameters = exponential_schema()  # type: ignore[union-attr]
app._tool_manager.get_tool("tree").parameters = cyclic_schema()  # type: ignore[union-attr]


def _serve_http(json_response: bool) -> None:
    """Over streamable HTTP on a free port, printed as ``PORT <n>`` once listening."""
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    server = uvicorn.Server(
        uvicorn.Config(app.streamable_http_app(json_response=json_response), log_level="warning")
    )
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        _serve_http(json_response=sys.argv[2:] == ["--json"])
    else:
        app.run()
