"""Nothing the pytest plugin started outlives pytest, however pytest ends.

Each test runs a child pytest in a folder of its own (its ``TMPDIR`` there too) whose one test
takes the plugin's PostgreSQL and Chroma fixtures and blocks; the servers' processes, ports and
folders are read while it blocks (from ``/proc``: the postmaster named by its port and its
children, the Chroma process named by its port), then the child is ended and all of them must
be gone within 20 s. Only the processes of that child run are looked at: other sessions'
servers on this machine are none of these tests' business.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.snippets import ROOT

pytestmark = pytest.mark.integration

CHILD_TEST = """
import json, os, pathlib, time

def test_hold(pywrapai_pg_url, pywrapai_chroma_url):
    pathlib.Path("urls.tmp").write_text(json.dumps([pywrapai_pg_url, pywrapai_chroma_url]))
    os.replace("urls.tmp", "urls.json")
    while not pathlib.Path("release").exists():
        time.sleep(0.05)
"""
GONE_WITHIN = 20.0


@dataclass
class Run:
    """A child pytest holding the plugin's servers, and what they are made of."""

    project: Path
    tmp: Path  # its TMPDIR
    proc: subprocess.Popen[bytes]
    processes: set[tuple[int, int]]  # (pid, start time): postmaster, its children, Chroma
    ports: tuple[int, int]
    folders: set[Path]


def _processes() -> dict[int, tuple[int, int, list[str]]]:
    """pid -> (ppid, start time, arguments) of every live process."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            args = (entry / "cmdline").read_bytes().decode().split("\0")
        except (OSError, ValueError):  # not a process, or it just ended
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":
            table[int(entry.name)] = (int(fields[1]), int(fields[19]), args)
    return table


def _after(args: list[str], flag: str) -> str | None:
    return args[args.index(flag) + 1] if flag in args[:-1] else None


def _servers(pg_port: int, chroma_port: int) -> tuple[set[tuple[int, int]], set[Path]]:
    """The processes (postmaster, its children, Chroma) and folders serving those ports."""
    table = _processes()
    postmaster = [p for p, (_, _, a) in table.items() if _after(a, "-p") == str(pg_port)]
    chroma = [p for p, (_, _, a) in table.items() if _after(a, "--port") == str(chroma_port)]
    assert len(postmaster) == 1, postmaster
    assert len(chroma) == 1, chroma
    children = [p for p, (ppid, _, _) in table.items() if ppid == postmaster[0]]
    assert len(children) >= 3, "a running postmaster has its checkpointer, writers, ..."
    pg_data = _after(table[postmaster[0]][2], "-D")
    chroma_dir = _after(table[chroma[0]][2], "--path")
    assert pg_data is not None and chroma_dir is not None
    folders = {Path(pg_data).parents[1], Path(chroma_dir)}
    return {(p, table[p][1]) for p in [*postmaster, *children, *chroma]}, folders


def _start(project: Path, tmp: Path) -> Run:
    """A child pytest on the plugin with ``tmp`` as TMPDIR, once its test holds both servers."""
    project.mkdir(exist_ok=True)
    (project / "test_hold.py").write_text(CHILD_TEST)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYWRAPAI_TEST_")}
    env.update(
        PYTHONPATH=str(ROOT),
        TMPDIR=str(tmp),
        DOCKER_HOST="unix:///nonexistent/docker.sock",  # the embedded servers, not containers
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
    )
    command = [sys.executable, "-m", "pytest", "-p", "pytest_pywrapai_graph"]
    command += ["--pywrapai-fixtures", "-p", "no:cacheprovider", "-q", "test_hold.py"]
    with (project / "out.txt").open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=project, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as a terminal's job is
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while not (project / "urls.json").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the child pytest did not start its servers:\n{_output(project)}")
            time.sleep(0.1)
        pg_url, chroma_url = json.loads((project / "urls.json").read_text())
        ports = (int(pg_url.rsplit(":", 1)[1].split("/")[0]), int(chroma_url.rsplit(":", 1)[1]))
        processes, folders = _servers(*ports)
        assert all(f.parent == tmp for f in folders), folders
    except BaseException:
        proc.kill()  # its watchdog stops what it started
        proc.wait()
        raise
    return Run(project, tmp, proc, processes, ports, folders)


def _output(project: Path) -> str:
    return (project / "out.txt").read_text(errors="replace")


def _alive(pid: int, started: int) -> bool:
    found = _processes().get(pid)
    return found is not None and found[1] == started


def _answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _left(run: Run, *, only_its_own: bool) -> list[str]:
    """What of the run's servers is still there (or of any server in its TMPDIR)."""
    left = [f"process {pid}" for pid, started in run.processes if _alive(pid, started)]
    left += [f"port {port}" for port in run.ports if _answers(port)]
    left += [f"folder {f}" for f in run.folders if f.exists()]
    if not only_its_own:
        left += [f"folder {f}" for f in run.tmp.glob("pywrapai-*")]
    return left


def _all_gone(run: Run, *, only_its_own: bool = False) -> None:
    deadline = time.monotonic() + GONE_WITHIN
    while _left(run, only_its_own=only_its_own) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _left(run, only_its_own=only_its_own)
    assert not left, f"left after {GONE_WITHIN} s: {left}\n{_output(run.project)}"


@pytest.fixture
def run(tmp_path: Path) -> Iterator[Run]:
    # not under tmp_path: PostgreSQL's user (nobody, under root) must reach its folder
    tmp = Path(tempfile.mkdtemp(prefix="plugin-cleanup-", dir="/tmp"))
    tmp.chmod(0o755)
    held = _start(tmp_path / "project", tmp)
    yield held
    if held.proc.poll() is None:
        held.proc.kill()
    held.proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)


def _end(run: Run, how: str) -> None:
    if how == "normal end":
        (run.project / "release").touch()
    elif how == "Ctrl-C":  # the terminal signals the whole foreground process group
        os.killpg(run.proc.pid, signal.SIGINT)
    else:  # what a CI timeout does: a signal to the pytest process alone
        run.proc.send_signal(signal.SIGTERM if how == "SIGTERM" else signal.SIGKILL)


@pytest.mark.parametrize("how", ["normal end", "Ctrl-C", "SIGTERM", "SIGKILL"])
def test_the_servers_stop_when_pytest_ends(run: Run, how: str) -> None:
    assert all(_alive(*p) for p in run.processes) and all(map(_answers, run.ports))
    _end(run, how)
    run.proc.wait(timeout=60)
    _all_gone(run)
    if how == "normal end":
        assert run.proc.returncode == 0, _output(run.project)


def test_a_new_session_removes_what_a_killed_one_left(run: Run) -> None:
    watchdogs = [p for p, (ppid, _, _) in _processes().items() if ppid == run.proc.pid]
    for pid in watchdogs:  # every child: the watchdog, and Chroma (it dies anyway)
        os.kill(pid, signal.SIGKILL)
    run.proc.kill()
    run.proc.wait()
    time.sleep(2)
    assert any(_alive(*p) for p in run.processes), "the postmaster outlives both"
    (run.project / "urls.json").unlink()
    second = _start(run.project, run.tmp)  # same TMPDIR: a new session of the same project
    try:
        _all_gone(run, only_its_own=True)
    finally:
        (run.project / "release").touch()
        second.proc.wait(timeout=60)
    _all_gone(second)
