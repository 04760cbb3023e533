"""The sweep of a new session: it stops and removes what a dead owner left, with the
server's children, and leaves a live owner's folder, and an unmarked one, alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pywrapai_graph.testing import reaper
from pywrapai_graph.testing.reaper import MARKER, sweep

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")

# a "server": its arguments name its folder; it starts a child whose arguments do not
SERVER = "import subprocess, time; subprocess.Popen(['sleep', '600']); time.sleep(600)"


def _start_time(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[19])


def _running(pid: int, started: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[0] != "Z" and int(fields[19]) == started


def _mark(folder: Path, pid: int, started: int) -> Path:
    folder.mkdir()
    (folder / MARKER).write_text(json.dumps({"kind": "chroma", "pid": pid, "started": started}))
    return folder


@pytest.fixture
def dead_owner() -> tuple[int, int]:
    """The pid and start time of a process that has ended."""
    proc = subprocess.Popen(["sleep", "60"])
    started = _start_time(proc.pid)
    proc.kill()
    proc.wait()
    return proc.pid, started


@pytest.fixture
def server(tmp_path: Path, dead_owner: tuple[int, int]) -> Iterator[tuple[Path, list[int]]]:
    """A dead owner's folder with a server (and its child) still running in it."""
    folder = _mark(tmp_path / "pywrapai-chroma-left", *dead_owner)
    proc = subprocess.Popen([sys.executable, "-c", SERVER, "--path", str(folder)])
    deadline = time.monotonic() + 30
    while not (children := Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text()):
        assert time.monotonic() < deadline, "the server did not start its child"
        time.sleep(0.05)
    yield folder, [proc.pid, int(children.split()[0])]
    proc.kill()
    proc.wait()


def test_a_dead_owners_server_and_its_children_stop_and_its_folder_goes(
    server: tuple[Path, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the child is sent no SIGTERM: it goes at the SIGKILL after the grace period, which
    # need not be the 5 s a real server has to shut down cleanly
    monkeypatch.setattr(reaper, "_GRACE", 0.5)
    folder, pids = server
    started = [_start_time(pid) for pid in pids]
    assert sweep(folder.parent) == [folder]
    assert not folder.exists()
    # a process sent SIGKILL ends when the kernel next runs it: soon, not always at once
    deadline = time.monotonic() + 10
    while any(_running(pid, s) for pid, s in zip(pids, started, strict=True)):
        assert time.monotonic() < deadline, "the server or its child outlived the sweep"
        time.sleep(0.05)


def test_a_live_owners_folder_and_an_unmarked_one_are_left_alone(tmp_path: Path) -> None:
    mine = _mark(tmp_path / "pywrapai-pg-live", os.getpid(), _start_time(os.getpid()))
    unmarked = tmp_path / "pywrapai-pg-unmarked"
    unmarked.mkdir()
    assert sweep(tmp_path) == []
    assert (mine / MARKER).exists() and unmarked.exists()


def test_a_reused_pid_is_not_taken_for_the_owner(tmp_path: Path) -> None:
    """The owner's pid now belongs to another process (this one): a start time tells them
    apart, so the folder is swept."""
    folder = _mark(tmp_path / "pywrapai-pg-reused", os.getpid(), _start_time(os.getpid()) - 1)
    assert sweep(tmp_path) == [folder]
    assert not folder.exists()
