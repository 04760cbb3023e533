"""Nothing the test servers started outlives the process that started them.

Each server of :mod:`pywrapai_graph.testing.servers` lives in a temp folder holding an
``owner`` marker: the kind of server and the pid (and start time) of the process that started
it. :func:`guard` writes the marker and hands the folder to a watchdog: a small process in a
session of its own, started once per owner, whose stdin is a pipe from the owner. When the
owner ends by any means (normal end, Ctrl-C, SIGTERM, SIGKILL) the kernel closes the pipe; the
watchdog reads EOF and :func:`reap` s every folder it was handed that is still there. A watchdog
killed with its owner leaves markers whose owner is dead: the next :func:`guard` (the next test
session) reaps those.

:func:`reap` finds a server's processes by its folder, not by a pid that could be reused: the
processes whose command line names the folder (``postgres -D <folder>/data/db``, ``chroma run
--path <folder>``) and their children. PostgreSQL gets SIGQUIT (immediate shutdown: the
postmaster stops its children and frees its shared memory), anything else SIGTERM; whatever is
left after a grace period gets SIGKILL. PostgreSQL runs as ``nobody`` through ``setpriv`` and
``pg_ctl`` detaches the postmaster into a session of its own, so neither a parent-death signal
(cleared on a change of user) nor a process-group kill could stop it; the watchdog (run by the
owner's user, root then) can.

Standard library only: the watchdog runs this file as a script, without importing the package.
Processes are read from ``/proc`` (Linux); elsewhere only the folders are removed.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

__all__ = ["MARKER", "guard", "reap", "sweep"]

#: the file in a server's folder that names its kind and owner
MARKER = "owner.json"
_PREFIX = "pywrapai-"
_PROC = Path("/proc/self/stat")
_GRACE = 5.0  # seconds a server has to stop on its signal before SIGKILL
_watchdog: tuple[int, subprocess.Popen[bytes], IO[str]] | None = None  # (owner pid, proc, pipe)
_lock = threading.Lock()
_inherited: list[tuple[int, subprocess.Popen[bytes], IO[str]]] = []  # a forked child's parent's


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, start time) of a process, or None when there is none."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the name may hold spaces and parentheses
    return fields[0], int(fields[1]), int(fields[19])


def _alive(pid: int, started: int) -> bool:
    """That very process (same start time) exists and is not a zombie."""
    if not _PROC.exists():  # no start times to compare: ask the kernel about the pid
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return True
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z" and stat[2] == started


def _processes() -> dict[int, tuple[int, int, list[str]]]:
    """Every live process: pid -> (ppid, start time, arguments)."""
    found: dict[int, tuple[int, int, list[str]]] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            stat = _stat(int(entry.name))
            with contextlib.suppress(OSError):
                raw = Path(entry.path, "cmdline").read_bytes()
                if stat is not None and stat[0] != "Z":
                    found[int(entry.name)] = (stat[1], stat[2], os.fsdecode(raw).split("\0"))
    return found


def _server_processes(folder: Path) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The processes that run in ``folder`` and their descendants, as (pid, start time)."""
    table = _processes()
    inside = str(folder) + os.sep

    def runs_in(args: list[str]) -> bool:
        return any(a == str(folder) or a.startswith(inside) for a in args)

    tops = [pid for pid, (_, _, args) in table.items() if runs_in(args) and pid != os.getpid()]
    family, todo = set(tops), list(tops)
    while todo:
        parent = todo.pop()
        children = [pid for pid, (ppid, _, _) in table.items() if ppid == parent]
        todo.extend(pid for pid in children if pid not in family)
        family.update(children)
    return [(p, table[p][1]) for p in tops], [(p, table[p][1]) for p in family]


def _signal(targets: list[tuple[int, int]], signum: int) -> None:
    for pid, started in targets:
        if _alive(pid, started):
            with contextlib.suppress(OSError):
                os.kill(pid, signum)


def reap(folder: Path) -> None:
    """Stop every process of the server in ``folder`` and remove the folder."""
    try:
        kind = json.loads((folder / MARKER).read_text())["kind"]
    except (OSError, ValueError, KeyError, TypeError):
        kind = ""
    tops, family = _server_processes(folder)
    _signal(family, signal.SIGCONT)  # a stopped (frozen) server could not act on its signal
    _signal(tops, signal.SIGQUIT if kind == "postgres" else signal.SIGTERM)
    deadline = time.monotonic() + _GRACE
    while any(_alive(*p) for p in family) and time.monotonic() < deadline:
        time.sleep(0.05)
    _signal(family, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


def _owner_gone(folder: Path) -> bool:
    try:
        owner = json.loads((folder / MARKER).read_text())
        return not _alive(int(owner["pid"]), int(owner["started"]))
    except (OSError, ValueError, KeyError, TypeError):
        return False  # no readable marker: not ours to judge


def sweep(directory: Path | None = None) -> list[Path]:
    """Reap the server folders in ``directory`` (the temp folder) whose owner is dead."""
    base = Path(directory or tempfile.gettempdir())
    stale = [f for f in base.glob(_PREFIX + "*") if f.is_dir() and _owner_gone(f)]
    for folder in stale:
        reap(folder)
    return stale


def _close_pipe_in_child() -> None:
    """A forked child must not hold the pipe open: the watchdog waits for the owner only."""
    global _watchdog, _lock  # noqa: PLW0603
    _lock = threading.Lock()  # another thread may have held it at the fork
    if _watchdog is not None:
        with contextlib.suppress(OSError):
            _watchdog[2].close()
        _inherited.append(_watchdog)  # kept: the parent's Popen must not be collected here
        _watchdog = None


def _stop_watchdog() -> None:
    """At a normal exit: close the pipe and let the watchdog reap what is left, then end."""
    if _watchdog is not None and _watchdog[0] == os.getpid():
        _watchdog[2].close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            _watchdog[1].wait(timeout=_GRACE * 3)


def _watch(*, replace: bool = False) -> tuple[int, subprocess.Popen[bytes], IO[str]]:
    """This process's watchdog, started on first use (after sweeping what dead owners left)."""
    global _watchdog  # noqa: PLW0603
    if replace or _watchdog is None or _watchdog[0] != os.getpid():
        sweep()  # what a killed session left behind
        read, write = os.pipe()
        proc = subprocess.Popen(
            [sys.executable, "-I", __file__],
            stdin=read,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C or a kill of the owner's group spares it
        )
        os.close(read)
        _watchdog = (os.getpid(), proc, os.fdopen(write, "w", buffering=1))
    return _watchdog


def guard(folder: Path, kind: str) -> None:
    """Mark ``folder`` as a ``kind`` server's, owned by this process, and have it reaped if
    this process ends before the server is stopped."""
    started = _stat(os.getpid())
    marker = {"kind": kind, "pid": os.getpid(), "started": started[2] if started else 0}
    (folder / MARKER).write_text(json.dumps(marker))
    with _lock:
        watchdog = _watch()
        try:
            watchdog[2].write(f"{folder}\n")
        except BrokenPipeError:  # someone killed the watchdog: start another
            with contextlib.suppress(OSError):
                watchdog[2].close()
            watchdog[1].wait()
            _watch(replace=True)[2].write(f"{folder}\n")


os.register_at_fork(after_in_child=_close_pipe_in_child)
if __name__ != "__main__":
    atexit.register(_stop_watchdog)


def _main() -> None:
    """The watchdog: collect folders from stdin until EOF (the owner is gone), reap them."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    folders = [Path(line.rstrip("\n")) for line in sys.stdin]
    for folder in folders:
        if folder.exists():
            reap(folder)


if __name__ == "__main__":
    _main()
