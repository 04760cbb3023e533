"""A CLI ingest of a text holding NUL into PostgreSQL (issue 24): stored, read back as is.

PostgreSQL's text type cannot hold NUL; the pgvector store escapes it, so the ingest that
stopped at such a file (a raw ValueError from the driver) stores it like the other stores.
"""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest
import yaml

from pywrapai_graph import PGVectorStore
from pywrapai_graph.composition.cli import main


def test_a_cli_ingest_stores_a_text_holding_nul(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    table = f"nul_{uuid.uuid4().hex[:10]}"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("alpha\x00beta gamma\n")
    (tmp_path / "docs" / "b.txt").write_text("delta epsilon\n")
    config = {"store": {"backend": "pgvector", "dsn": pg_url, "table": table, "dimension": 384}}
    (tmp_path / "pywrapai.yaml").write_text(yaml.safe_dump(config))
    out, err = io.StringIO(), io.StringIO()
    code = main(["--config", "pywrapai.yaml", "ingest", "docs"], out=out, err=err)
    assert (code, err.getvalue()) == (0, ""), out.getvalue()
    assert out.getvalue().strip().splitlines()[-1].startswith("2 chunks added")
    store = PGVectorStore(pg_url, table_name=table, dimension=384)
    [hit] = store.lexical_search("beta", k=5)
    assert hit.chunk.text == "alpha\x00beta gamma"
    store.close()
