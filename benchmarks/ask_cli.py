"""``pywrapai-graph ask --show-messages`` on an 85k-chunk SQLite store, against its floors.

Run: .venv/bin/python -m benchmarks.ask_cli

Every row is a fresh interpreter run as a user runs the command (subprocess, wall clock,
median of the runs, all rows interleaved in one loop so machine load hits them alike; the
same runs' CPU time, user + system, is printed too: on a shared machine it moves less):

- ``python -c "import numpy, sqlite3"``: the floor of any process that searches vectors;
- the same with ``OPENBLAS_NUM_THREADS=1``: the command line gives numpy's BLAS one thread
  (no pool of spinning threads; it does a few matrix-vector products), so this is the floor
  of the same choice;
- the same plus reading every stored vector into one matrix (``SELECT embedding``): the
  floor of an exact search that starts cold;
- importing the command line module (what every command pays before it reads anything);
- ``pywrapai-graph ask --show-messages QUESTION`` (hashing embedder, no LLM configured);
- what importing pydantic-settings and dependency-injector would add to it (the reasons the
  command line reads settings with ``composition/environment.py`` and builds from
  ``ObjectGraph`` rather than the container).

The package's bytecode is compiled first, as ``pip install`` does: a run with
``PYTHONDONTWRITEBYTECODE`` set and no ``__pycache__`` would compile every module each time.
"""

from __future__ import annotations

import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pywrapai_graph
from benchmarks._data import unit_vectors
from benchmarks._table import print_table
from benchmarks.sqlite_store import fill
from pywrapai_graph import Embedder
from pywrapai_graph.domain.manifest import EmbedderIdentity

ASK_N, DIM, RUNS = 85_000, 384, 9
QUESTION = "How long do refunds take?"
#: ``env OPENBLAS_NUM_THREADS=1 ...``: the floor as the command line runs numpy
ONE_THREAD = ["env", "OPENBLAS_NUM_THREADS=1"]


def median_runs(
    commands: dict[str, list[str]], cwd: str, env: dict[str, str]
) -> tuple[dict[str, float], dict[str, float]]:
    """The median wall time and CPU time (user + system) of each command over ``RUNS``
    interleaved rounds."""
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(RUNS):
        for name, argv in commands.items():
            start = time.perf_counter()
            child = subprocess.Popen(
                argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            assert child.stderr is not None
            with child.stderr:
                errors = child.stderr.read()
            _, status, usage = os.wait4(child.pid, 0)  # reaped here, with its CPU time
            wall[name].append(time.perf_counter() - start)
            child.returncode = os.waitstatus_to_exitcode(status)
            if child.returncode != 0:
                raise SystemExit(f"{name} failed: {errors.decode(errors='replace')}")
            cpu[name].append(usage.ru_utime + usage.ru_stime)
    return (
        {name: statistics.median(t) for name, t in wall.items()},
        {name: statistics.median(t) for name, t in cpu.items()},
    )


def ask() -> None:
    compileall.compile_dir(os.path.dirname(pywrapai_graph.__file__), quiet=1)
    embedder = Embedder("hashing")
    identity = EmbedderIdentity(embedder.provider, embedder.model, DIM)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ask.db"
        fill(path, unit_vectors(ASK_N, DIM, seed=9), identity)
        env = {
            **os.environ,
            "PYWRAPAI_STORE__BACKEND": "sqlite",
            "PYWRAPAI_STORE__PATH": str(path),
            "PYWRAPAI_EMBEDDER__PROVIDER": "hashing",
        }
        read = (
            "import numpy, sqlite3\n"
            f"c = sqlite3.connect({str(path)!r})\n"
            "b = b''.join(r[0] for r in c.execute('SELECT embedding FROM vector_chunks'))\n"
            f"numpy.frombuffer(b, numpy.float32).reshape(-1, {DIM})\n"
        )
        cli = [sys.executable, "-m", "pywrapai_graph.composition.cli"]
        t, cpu = median_runs(
            {
                "floor": [sys.executable, "-c", "import numpy, sqlite3"],
                "floor1": [*ONE_THREAD, sys.executable, "-c", "import numpy, sqlite3"],
                "read": [sys.executable, "-c", read],
                "import": [sys.executable, "-c", "import pywrapai_graph.composition.cli"],
                "ask": [*cli, "ask", "--show-messages", QUESTION],
                "pydantic": [sys.executable, "-c", "import pydantic"],
                "settings": [sys.executable, "-c", "import pydantic, pydantic_settings"],
                "di": [sys.executable, "-c", "import pydantic, dependency_injector.containers"],
            },
            tmp,
            env,
        )
    for label, times in (("wall", t), ("CPU", cpu)):
        base = times["floor"]
        print_table(
            f"ask --show-messages on a {ASK_N:,}-chunk SQLite store ({label} ms, median of {RUNS})",
            [
                ('python -c "import numpy, sqlite3" (floor)', base, 1.0),
                ("  the same, OPENBLAS_NUM_THREADS=1", times["floor1"], times["floor1"] / base),
                ("floor + SELECT embedding into one matrix", times["read"], times["read"] / base),
                ("import pywrapai_graph.composition.cli", times["import"], times["import"] / base),
                ("pywrapai-graph ask --show-messages", times["ask"], times["ask"] / base),
            ],
            unit="ms",
        )
    for module, key in (("pydantic-settings", "settings"), ("dependency-injector", "di")):
        extra = t[key] - t["pydantic"]
        print(
            f"importing {module} on top of pydantic: {extra * 1000:.0f} ms = "
            f"{extra / t['ask']:.0%} of an ask (the command line reads settings with "
            "composition/environment.py and builds from ObjectGraph: over 10% keeps them out)"
        )
    print(f"target: ask under 500 ms -> {'met' if t['ask'] < 0.5 else 'NOT met'}")


if __name__ == "__main__":
    ask()
