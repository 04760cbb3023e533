"""The built wheel alone runs the quickstart and the main job (not this checkout).

A package file or data file missing from the wheel (the price table, ``py.typed``, a module
that only the checkout has) fails here, where the editable install used by every other test
would hide it. The wheel and sdist are built the way a release is (``python -m build``,
isolated), installed into a fresh virtual environment with the extras the quickstart and the
main job use, and run from a folder outside the checkout with no ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import pywrapai_graph
from tests import snippets

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> str:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{argv}: rc={done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYWRAPAI_", "PYTHON", "VIRTUAL_ENV", "PIP_NO_INDEX"))
    }
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], ROOT, _clean_env())
    return out


@pytest.fixture(scope="module")
def fresh_venv(dist: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    venv = tmp_path_factory.mktemp("venv") / "fresh"
    _run([sys.executable, "-m", "venv", str(venv)], venv.parent, _clean_env())
    wheel = next(dist.glob("*.whl"))
    _run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            f"{wheel}[local,anthropic]",
        ],
        venv.parent,
        _clean_env(),
    )
    return venv


def test_wheel_sdist_package_and_changelog_agree_on_the_version(dist: Path) -> None:
    version = pywrapai_graph.__version__
    names = sorted(p.name for p in dist.iterdir())
    assert names == [
        f"pywrapai_graph-{version}-py3-none-any.whl",
        f"pywrapai_graph-{version}.tar.gz",
    ]
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    released = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, flags=re.MULTILINE)
    assert released, "CHANGELOG.md names no released version"
    assert released[0] == version, "the newest release in CHANGELOG.md is not __version__"
    with zipfile.ZipFile(next(dist.glob("*.whl"))) as wheel:
        files = set(wheel.namelist())
    for needed in (
        "pywrapai_graph/py.typed",
        "pywrapai/py.typed",
        "pywrapai_graph/application/default_prices.json",
        "pytest_pywrapai_graph.py",
    ):
        assert needed in files, f"{needed} is missing from the wheel"


def test_the_installed_wheel_runs_the_main_job_and_the_quickstart(
    fresh_venv: Path, tmp_path: Path
) -> None:
    work = snippets.repository_copy(tmp_path)
    (work / ".venv").unlink()  # the fresh environment, never the test's
    python = str(fresh_venv / "bin" / "python")
    env = _clean_env(TMPDIR=str(work / "tmp"))
    where = _run([python, "-c", "import pywrapai_graph; print(pywrapai_graph.__file__)"], work, env)
    assert where.startswith(str(fresh_venv)), where
    cli = str(fresh_venv / "bin" / "pywrapai-graph")
    ingested = _run([cli, "ingest", "examples/data"], work, env)
    assert "4 chunks in the store" in ingested
    shown = _run([cli, "ask", "--show-messages", "How long do refunds take?"], work, env)
    assert "<context>" in shown and "refund" in shown.lower()

    readme = ROOT / "README.md"
    quickstart = next(s for s in snippets.parse(readme) if s.lang == "python" and s.kind == "run")
    with snippets.wire_environment() as wires:
        out = _run([python, "-c", quickstart.code], work, {**env, **wires})
    assert snippets.WIRE_REPLY in out
    total_cost = float(out.split()[-1])  # priced from the table the wheel ships
    assert total_cost > 0, out
