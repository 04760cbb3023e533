"""What the MCP tests share: the test server, a real HTTP one, and leak checks from /proc."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SERVER = str(Path(__file__).with_name("mcp_server.py"))


def children() -> set[int]:
    """This process's child processes, zombies included (a zombie is a leaked child)."""
    me, found = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == me:
            found.add(int(entry))
    return found


def reaped(pid: int) -> bool:
    """True when ``pid`` no longer exists (``kill(pid, 0)`` succeeds on a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def established_to(port: int) -> int:
    """TCP connections of this machine in state ESTABLISHED towards ``port``."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[3] == "01" and int(fields[2].rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


@dataclass(frozen=True)
class HttpServer:
    process: subprocess.Popen[str]
    port: int
    token: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@contextmanager
def http_server(token: str) -> Iterator[HttpServer]:
    """The test server over streamable HTTP in a subprocess, killed on exit."""
    process = subprocess.Popen(
        [sys.executable, SERVER, "--http", token], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("PORT "), f"the MCP test server did not start: {line!r}"
        yield HttpServer(process, int(line.split()[1]), token)
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
