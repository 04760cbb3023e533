"""A test collection in the BEIR layout: ``corpus.jsonl``, ``queries.jsonl``, ``qrels.tsv``."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pywrapai_graph.domain import Document
from pywrapai_graph.errors import ConfigurationError

__all__ = ["BeirCollection", "load_beir"]


@dataclass(frozen=True, slots=True)
class BeirCollection:
    """Documents, queries (id -> text) and graded judgements (query -> document -> grade)."""

    name: str
    corpus: list[Document]
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)


#: the largest relevance grade taken (BEIR's collections use 0 to 4): larger ones would
#: overflow the gain sums
MAX_GRADE = 1_000_000


def _text_lines(path: Path) -> Iterator[tuple[int, str]]:
    """The lines of a UTF-8 file, numbered from 1.

    Raises:
        ConfigurationError: a line is not UTF-8 (naming the file and line).
    """
    with path.open("rb") as f:
        for number, raw in enumerate(f, start=1):
            try:
                yield number, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ConfigurationError(
                    f"{path}:{number}: not UTF-8 text (invalid byte at column {exc.start + 1}); "
                    "save the file as UTF-8"
                ) from None


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, line in _text_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
        except RecursionError:
            raise ConfigurationError(f"{path}:{number}: JSON nested too deeply") from None
        if not isinstance(row, dict) or "_id" not in row:
            raise ConfigurationError(f'{path}:{number}: a JSON object with "_id" expected')
        bad = [k for k in ("title", "text") if not isinstance(row.get(k) or "", str)]
        if not isinstance(row["_id"], str | int) or isinstance(row["_id"], bool) or bad:
            raise ConfigurationError(
                f'{path}:{number}: "_id" must be a string (or an integer) and "title" and '
                f'"text" strings, got {", ".join(bad) or "_id"} of another type'
            )
        yield number, row


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    rows = csv.reader((line for _, line in _text_lines(path)), delimiter="\t")
    for number, row in enumerate(rows, start=1):
        if number == 1 or not row:
            continue
        try:
            query_id, doc_id, grade = row[0], row[1], int(row[2])
        except (IndexError, ValueError):
            raise ConfigurationError(
                f"{path}:{number}: expected query-id, corpus-id and an integer score"
            ) from None
        if abs(grade) > MAX_GRADE:
            digits = str(grade)
            raise ConfigurationError(
                f"{path}:{number}: the score {digits[:12]}{'...' if len(digits) > 12 else ''} "
                "is out of range "
                f"(-{MAX_GRADE:,} to {MAX_GRADE:,}; BEIR grades are 0 to 4)"
            )
        qrels.setdefault(query_id, {})[doc_id] = grade
    return qrels


def _text(row: dict[str, Any]) -> str:
    """The title and the text; the title once, when the text already begins with it."""
    title = str(row.get("title") or "").strip()
    text = str(row.get("text") or "").strip()
    if not title or text.lower().startswith(title.lower()):
        return text
    return f"{title}\n\n{text}"


def load_beir(folder: str | os.PathLike[str], qrels_file: str = "qrels.tsv") -> BeirCollection:
    """Read a BEIR-layout folder.

    ``corpus.jsonl`` rows are ``{"_id", "title", "text"}`` (a document's text is its title
    followed by its text, the title once if the text already starts with it);
    ``queries.jsonl`` rows ``{"_id", "text"}``; ``qrels.tsv`` (or ``qrels/test.tsv``) has a
    header line, then ``query-id<TAB>corpus-id<TAB>score``. Only queries with judgements
    are kept.

    Raises:
        ConfigurationError: a file is missing or malformed (the message names file and line).
    """
    root = Path(folder)
    paths = {"corpus": root / "corpus.jsonl", "queries": root / "queries.jsonl"}
    qrels_path = root / qrels_file
    if not qrels_path.is_file() and (root / "qrels" / "test.tsv").is_file():
        qrels_path = root / "qrels" / "test.tsv"
    paths["qrels"] = qrels_path
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise ConfigurationError(
            f"{str(root)!r} is not a BEIR-layout folder: missing {', '.join(missing)}"
        )
    qrels = _qrels(qrels_path)
    corpus = [
        Document(_text(row), metadata={"title": str(row.get("title") or "")}, id=str(row["_id"]))
        for _, row in _lines(paths["corpus"])
    ]
    queries = {
        str(row["_id"]): str(row.get("text") or "")
        for _, row in _lines(paths["queries"])
        if str(row["_id"]) in qrels
    }
    return BeirCollection(root.resolve().name, corpus, queries, qrels)
