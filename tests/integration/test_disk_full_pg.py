"""PostgreSQL out of room: the store's tables live in a tablespace on a small tmpfs.

The embedded server runs on this machine, so the test mounts a 3 MB tmpfs owned by the
server's user, creates a tablespace there and points the store's connection at it
(``default_tablespace``): every table and index the store creates fills that filesystem.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import psycopg2
import pytest

from pywrapai_graph import PGVectorStore
from tests.faults.small_disk import DIM, fill_then_free, tmpfs


@pytest.fixture
def small_tablespace(tmp_path: Path, pg_url: str) -> Iterator[str]:
    """A tablespace on a 3 MB filesystem of its own; its name."""
    admin = psycopg2.connect(pg_url)
    admin.autocommit = True
    try:
        with admin.cursor() as cur:
            cur.execute("SELECT current_setting('data_directory')")
            data = Path(cur.fetchone()[0])
        if not data.is_dir():
            pytest.skip("the PostgreSQL server's files are not on this machine")
        owner = data.stat()
        name = f"small_{tmp_path.name[-12:].replace('-', '_')}"
        # under /tmp, which the server's user can reach (the test's own folder is private)
        mount = Path(tempfile.mkdtemp(prefix="pywrapai-tablespace-"))
        options = f"size=3m,uid={owner.st_uid},gid={owner.st_gid},mode=0700"
        with tmpfs(mount, options):
            with admin.cursor() as cur:
                cur.execute(f"CREATE TABLESPACE {name} LOCATION %s", (str(mount),))
            try:
                yield name
            finally:
                with admin.cursor() as cur:
                    cur.execute(
                        "SELECT c.relname FROM pg_class c JOIN pg_tablespace t "
                        "ON t.oid = c.reltablespace WHERE t.spcname = %s AND c.relkind = 'r'",
                        (name,),
                    )
                    for (table,) in cur.fetchall():
                        cur.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')
                    cur.execute(f"DROP TABLESPACE {name}")
        mount.rmdir()
    finally:
        admin.close()


def test_pgvector_full_tablespace(small_tablespace: str, pg_url: str) -> None:
    name = small_tablespace
    admin = psycopg2.connect(pg_url)
    admin.autocommit = True
    with admin.cursor() as cur:  # room to free later
        cur.execute(
            f"CREATE TABLE ballast_{name} TABLESPACE {name} AS SELECT string_agg("
            "md5(random()::text), '') AS filler FROM generate_series(1, 30) g, "
            "generate_series(1, 600) r GROUP BY r"
        )
        cur.execute("SELECT oid FROM pg_tablespace WHERE spcname = %s", (name,))
        oid = cur.fetchone()[0]
    joiner = "&" if "?" in pg_url else "?"
    dsn = f"{pg_url}{joiner}options={quote(f'-c default_tablespace={name}')}"

    def free() -> None:
        with admin.cursor() as cur:
            cur.execute(f"DROP TABLE ballast_{name}")

    error, _, _ = fill_then_free(lambda: PGVectorStore(dsn, f"kb_{name}", DIM), free)
    assert f"pg_tblspc/{oid}/" in error.path  # the full file, in that tablespace
    assert "full" in str(error) and error.path in str(error)
    admin.close()
