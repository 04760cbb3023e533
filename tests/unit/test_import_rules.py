"""The import-linter contracts catch the violations that matter.

Each test copies the package and the contracts to a temporary directory, plants one violation
and runs ``lint-imports`` there: the run must fail and name the contract that caught it. The
untouched copy must pass, so a failure is the planted import's doing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _copy_project(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("pywrapai_graph", "pywrapai"):
        shutil.copytree(ROOT / package, dest / package, ignore=ignore)
    (dest / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "import_contracts.py", dest / "scripts")
    shutil.copy2(ROOT / "pyproject.toml", dest)
    return dest


def _lint(project: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(project), "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def _prepend_import(path: Path, line: str) -> None:
    """Insert ``line`` right after ``from __future__ import annotations``."""
    source = path.read_text(encoding="utf-8")
    marker = "from __future__ import annotations\n"
    assert marker in source, path
    path.write_text(source.replace(marker, marker + line + "\n", 1), encoding="utf-8")


def _broken(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0, result.stdout
    return result.stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _copy_project(tmp_path)


def test_the_untouched_copy_keeps_every_contract(project: Path) -> None:
    result = _lint(project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_testing_kit_importing_the_container_is_caught(project: Path) -> None:
    (project / "pywrapai_graph" / "testing" / "planted.py").write_text(
        "from pywrapai_graph.composition.container import Container\n", encoding="utf-8"
    )
    out = _broken(_lint(project))
    assert "Hexagon layers point inward (every sub-package has its place) BROKEN" in out
    assert "pywrapai_graph.testing.planted -> pywrapai_graph.composition.container" in out


def test_new_adapter_package_importing_two_adapters_is_caught(project: Path) -> None:
    package = project / "pywrapai_graph" / "adapters" / "planted"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from pywrapai_graph.adapters.llm.openai import OpenAIChatModel\n"
        "from pywrapai_graph.adapters.vectorstores.sqlite.store import SQLiteVectorStore\n",
        encoding="utf-8",
    )
    out = _broken(_lint(project))
    # Undeclared, it breaks exhaustiveness...
    assert "Adapter packages are independent; their shared kits sit below them BROKEN" in out
    assert "planted" in out
    # ...and declared in the adapters' independent layer, it breaks independence.
    config = project / "pyproject.toml"
    text = config.read_text(encoding="utf-8")
    declared = text.replace('"llm | embedders | ', '"planted | llm | embedders | ')
    assert declared != text
    config.write_text(declared, encoding="utf-8")
    out = _broken(_lint(project))
    assert "Adapter packages are independent; their shared kits sit below them BROKEN" in out
    assert "pywrapai_graph.adapters.planted -> pywrapai_graph.adapters.llm.openai" in out
    assert (
        "pywrapai_graph.adapters.planted -> pywrapai_graph.adapters.vectorstores.sqlite.store"
        in out
    )


@pytest.mark.parametrize("module", ["sqlite3", "urllib.request"])
def test_application_importing_a_driver_or_the_network_is_caught(
    project: Path, module: str
) -> None:
    _prepend_import(project / "pywrapai_graph" / "application" / "chunker.py", f"import {module}")
    out = _broken(_lint(project))
    assert (
        "Application uses the standard library (no driver, no network), numpy and pydantic BROKEN"
        in out
    )
    top = module.split(".", maxsplit=1)[0]  # externals are squashed to their top-level package
    assert f"pywrapai_graph.application.chunker is not allowed to import {top}" in out


@pytest.mark.parametrize("package", ["yaml", "requests"])
def test_domain_importing_a_third_party_package_is_caught(project: Path, package: str) -> None:
    # Any third-party package, not only those a forbidden list happens to name.
    _prepend_import(project / "pywrapai_graph" / "domain" / "documents.py", f"import {package}")
    out = _broken(_lint(project))
    assert "Domain and ports use the standard library only BROKEN" in out
    assert f"pywrapai_graph.domain.documents is not allowed to import {package}" in out


def test_root_package_importing_an_adapter_eagerly_is_caught(project: Path) -> None:
    _append(
        project / "pywrapai_graph" / "__init__.py",
        "\nfrom pywrapai_graph.adapters.vectorstores.sqlite.store import SQLiteVectorStore  # noqa\n",
    )
    out = _broken(_lint(project))
    assert "Only composition imports the adapters BROKEN" in out
    assert "pywrapai_graph -> pywrapai_graph.adapters.vectorstores.sqlite.store" in out


def test_the_error_map_names_every_error() -> None:
    from pywrapai_graph import errors

    doc = errors.__doc__ or ""
    missing = [name for name in errors.__all__ if name.endswith("Error") and name not in doc]
    assert not missing, f"add {missing} to the map in pywrapai_graph/errors.py's docstring"
