"""What `pywrapai-graph ask` loads and builds: only what the command uses, wired as the container.

The command line builds its objects with the container's factories through
:class:`ObjectGraph` instead of a dependency-injector container (whose import, with the
web framework it probes for, cost more than an `ask` on an 85k-chunk store). These tests keep
that structure: no timing is asserted.
"""

from __future__ import annotations

import gc
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pywrapai_graph import SQLiteVectorStore
from pywrapai_graph.composition.cli import BLAS_THREAD_VARIABLES, main
from pywrapai_graph.composition.container import build_container
from pywrapai_graph.composition.object_graph import ObjectGraph
from pywrapai_graph.composition.settings import load_settings
from pywrapai_graph.errors import VectorStoreError
from pywrapai_graph.testing.contracts.vector_store import make_chunks

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "How long do refunds take?"
#: modules `ask` on a SQLite store with the hashing embedder has no use for
NOT_LOADED = [
    "dependency_injector",
    "fastapi",
    "pydantic_settings",
    "asyncio",
    "chromadb",
    "qdrant_client",
    "qdrant_edge",
    "psycopg2",
    "faiss",
    "pywrapai_graph.application.run_agent",
    "pywrapai_graph.adapters.sources.beir",
    # the ingest pipeline and the chunker: only `ingest` imports them
    "pywrapai_graph.application.ingest_documents",
    "pywrapai_graph.application.chunker",
]
_PROBE = (
    "import json, sys\n"
    "from pywrapai_graph.composition.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print(json.dumps([code, sorted(sys.modules)]))\n"
)


@pytest.fixture
def kb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with one ingested Markdown file in a SQLite store, configured by a YAML file."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.upper().startswith("PYWRAPAI_") and not name.upper().startswith("PYWRAPAI_TEST_"):
            monkeypatch.delenv(name)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "refunds.md").write_text(
        "# Refunds\n\nRefunds are issued within 5 business days after we receive the parcel.\n"
    )
    (tmp_path / "pywrapai.yaml").write_text("store:\n  backend: sqlite\n  path: kb/store.db\n")
    assert main(["ingest", "docs"]) == 0
    return tmp_path


def _probe(cwd: Path, env: dict[str, str], *argv: str) -> tuple[int, list[str], str]:
    """Run the CLI in a fresh interpreter: exit code, every module it imported, its output."""
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        cwd=cwd,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    *shown, last = done.stdout.rstrip("\n").split("\n")
    code, modules = json.loads(last)
    return code, modules, "\n".join(shown)


def test_ask_imports_no_container_no_other_backend_and_no_yaml_without_a_file(kb: Path) -> None:
    (kb / "pywrapai.yaml").unlink()
    env = {
        **os.environ,
        "PYWRAPAI_STORE__BACKEND": "sqlite",
        "PYWRAPAI_STORE__PATH": str(kb / "kb" / "store.db"),
        "PYWRAPAI_EMBEDDER__PROVIDER": "hashing",
    }
    code, modules, out = _probe(kb, env, "ask", "--show-messages", QUESTION)
    assert code == 0
    assert "Refunds are issued within 5 business days" in out
    assert [m for m in [*NOT_LOADED, "yaml"] if m in modules] == []


def test_every_command_runs_without_dependency_injector(kb: Path) -> None:
    for argv in (["ask", QUESTION], ["store", "stats"], ["ingest", "docs"]):
        code, modules, _ = _probe(kb, dict(os.environ), *argv)
        assert code == 0, argv
        assert "dependency_injector" not in modules, argv
        assert "yaml" in modules  # the configuration file was read


def test_object_graph_show_the_same_messages_as_the_container(kb: Path) -> None:
    settings = load_settings(["pywrapai.yaml"])
    objects = ObjectGraph(settings)
    container = build_container(settings)
    ours = objects.graph().assemble(QUESTION)
    theirs = container.graph().assemble(QUESTION)
    assert ours == theirs
    assert ours[1]  # context was retrieved
    objects.vector_store().close()
    container.shutdown()


def test_object_graph_build_each_object_once_and_share_them(kb: Path) -> None:
    objects = ObjectGraph(load_settings(["pywrapai.yaml"]))
    graph = objects.graph()
    assert objects.graph() is graph
    assert objects.retriever().store is objects.vector_store()
    assert objects.retriever().embedder is objects.embedder()
    assert objects.embedder().tokens is objects.ledger()
    assert objects.llm() is None  # no provider configured
    assert objects.hooks() == ()
    assert objects.settings().store.backend == "sqlite"
    objects.vector_store().close()


def test_a_row_of_another_dimension_fails_the_first_load_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with SQLiteVectorStore(path) as store:
        store.add(make_chunks(5, 8))
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE vector_chunks SET embedding = zeroblob(16) WHERE id = 'c3'")
    # opening reads no vectors (a re-ingest of unchanged files never needs them); the first
    # search or write loads them and names the bad row
    with SQLiteVectorStore(path) as store:
        assert len(store) == 5
        with pytest.raises(
            VectorStoreError, match="different dimensions: 'c3' has 4, the first row 8"
        ):
            store.search([1.0] * 8, k=1)


def test_the_collector_pause_during_imports_is_undone() -> None:
    code = (
        "import gc; before = gc.isenabled(); {pre}\n"
        "import pywrapai_graph.composition.cli\n"
        "print(gc.isenabled(), gc.get_freeze_count())\n"
    )
    for pre, shown in (("", "True 0"), ("gc.disable()", "False 0")):
        done = subprocess.run(
            [sys.executable, "-c", code.format(pre=pre)],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            check=True,
        )
        assert done.stdout.strip() == shown


def test_main_called_with_arguments_leaves_the_collector_alone(kb: Path) -> None:
    frozen = gc.get_freeze_count()
    assert main(["ask", QUESTION]) == 0
    assert gc.get_freeze_count() == frozen  # only the program itself (argv None) freezes


_THREADS = (
    "import os, sys\n"
    "{start}\n"
    "import numpy\n"
    "numpy.ones((512, 512), numpy.float32) @ numpy.ones(512, numpy.float32)\n"
    "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))\n"
)
_AS_SCRIPT = "sys.argv[0] = '/usr/bin/pywrapai-graph'\nimport pywrapai_graph.composition.cli"
_AS_MODULE = (
    "import runpy\nsys.argv = ['cli', '--help']\n"
    "try:\n"
    "    runpy.run_module('pywrapai_graph.composition.cli', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass"
)
_AS_LIBRARY = "import pywrapai_graph.composition.cli"


def _threads(start: str, **variables: str) -> tuple[int, str]:
    """OS threads of a fresh interpreter after ``start`` and a BLAS product, and the
    ``OPENBLAS_NUM_THREADS`` its environment holds afterwards."""
    env = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARIABLES}
    done = subprocess.run(
        [sys.executable, "-c", _THREADS.format(start=start)],
        env={**env, **variables, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    *_, threads, variable = done.stdout.split()  # after what the command printed
    return int(threads), variable


@pytest.mark.skipif(
    (os.cpu_count() or 1) < 2 or not Path("/proc/self/task").is_dir(),
    reason="needs 2 cores (numpy's BLAS starts one thread per core) and /proc",
)
def test_the_program_runs_numpy_with_one_blas_thread_unless_the_user_chose() -> None:
    pool, _ = _threads("")  # numpy alone starts its pool of threads
    assert pool >= 2
    # run as the program (console script or python -m): one thread, environment as it was
    assert _threads(_AS_SCRIPT) == (1, "None")
    assert _threads(_AS_MODULE) == (1, "None")
    # imported by other code: nothing changes
    assert _threads(_AS_LIBRARY) == (pool, "None")
    # the user's own choice wins
    assert _threads(_AS_SCRIPT, OPENBLAS_NUM_THREADS="2") == (2, "2")
    assert _threads(_AS_SCRIPT, OMP_NUM_THREADS="2")[0] == pool
