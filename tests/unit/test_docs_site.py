"""The documentation site covers the library: every public name has its reference entry,
every page is in the navigation, and the README stays a short front page."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

import pywrapai
import pywrapai_graph

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def _directives() -> set[str]:
    found: set[str] = set()
    for page in (DOCS / "reference").glob("*.md"):
        found.update(re.findall(r"^::: ([\w.]+)$", page.read_text(encoding="utf-8"), re.M))
    return found


def test_every_public_name_has_a_reference_entry() -> None:
    entries = {path.rsplit(".", 1)[-1]: path for path in _directives()}
    deprecated = {"HashingEmbedder"}  # documented under its new name, FeatureHashingEmbedder
    missing = sorted(
        name
        for name in pywrapai_graph.__all__
        if name != "__version__" and name not in deprecated and name not in entries
    )
    assert not missing, f"public names without a reference entry: {missing}"
    for name, path in entries.items():
        if name in pywrapai_graph.__all__:  # the entry documents the object the name exports
            module, attribute = path.rsplit(".", 1)
            assert getattr(__import__(module, fromlist=[attribute]), attribute) is getattr(
                pywrapai_graph, name
            )
    assert {"pywrapai", "pywrapai_graph.errors"} <= _directives()
    assert set(pywrapai.__all__) <= set(pywrapai_graph.__all__)  # re-exports, documented once


def _nav_pages(node: object) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [p for value in node.values() for p in _nav_pages(value)]
    if isinstance(node, list):
        return [p for item in node for p in _nav_pages(item)]
    return []


def test_every_page_is_in_the_navigation_once() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    pages = sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages


def test_the_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    for command in (
        "bash scripts/setup.sh && .venv/bin/pywrapai-graph ingest examples/data",
        "bash scripts/setup.sh && bash scripts/test.sh",
    ):
        assert command in readme
    linked = set(re.findall(r"\]\(docs/([\w/.-]+\.md)", readme))
    assert linked, "the README links into the site"
    assert all((DOCS / page).is_file() for page in linked)
