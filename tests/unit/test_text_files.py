"""TextFiles and `ingest`: only what was pointed at is read; every skip has a reason."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from pywrapai_graph.adapters.sources.text_files import TextFiles
from pywrapai_graph.composition.cli import EXIT_SKIPPED, main


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    (root / "a.md").write_text("inside file a")
    (root / "sub" / "b.txt").write_text("inside file b")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("outside secret")
    os.symlink(tmp_path / "outside" / "secret.txt", root / "leak.txt")
    os.symlink(tmp_path / "outside", root / "linked_dir")
    os.symlink("/proc/self/environ", root / "environ.txt")
    os.symlink(root / "a.md", root / "alias.md")  # inside the root: read once, as a.md
    os.mkfifo(root / "pipe.txt")
    (root / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))
    return root


def sqlite_cli_folder(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the CLI from ``folder``, with a config that stores into ``kb/s.db`` (SQLite)."""
    monkeypatch.chdir(folder)
    monkeypatch.delenv("PYWRAPAI_STORE__BACKEND", raising=False)
    (folder / "pywrapai.yaml").write_text("store:\n  backend: sqlite\n  path: kb/s.db\n")


def ingest_skipping(folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`ingest folder` through the CLI into SQLite: it must exit 3 (some skipped); its lines."""
    sqlite_cli_folder(tmp_path, monkeypatch)
    out, err = io.StringIO(), io.StringIO()
    code = main(["ingest", str(folder)], out=out, err=err)
    assert code == EXIT_SKIPPED, err.getvalue()
    return out.getvalue().splitlines()


def texts(files: TextFiles) -> list[str]:
    return sorted(d.text for d in files.documents())


def test_links_out_devices_and_bad_encodings_are_skipped(tree: Path) -> None:
    files = TextFiles([tree])
    assert texts(files) == ["inside file a", "inside file b"]
    reasons = {Path(s.source).name: s.reason for s in files.skipped}
    assert set(reasons) == {"leak.txt", "linked_dir", "environ.txt", "pipe.txt", "latin1.txt"}
    assert "symbolic link out" in reasons["leak.txt"]
    assert "symbolic link out" in reasons["linked_dir"]
    assert "symbolic link out" in reasons["environ.txt"]
    assert "FIFO" in reasons["pipe.txt"]
    assert "not UTF-8" in reasons["latin1.txt"]


def test_following_links_is_a_choice_and_proc_stays_out(tree: Path) -> None:
    files = TextFiles([tree], follow_symlinks=True)
    assert texts(files) == [
        "inside file a",
        "inside file b",
        "outside secret",
    ]  # once, though linked twice
    reasons = {Path(s.source).name: s.reason for s in files.skipped}
    assert "pseudo-file" in reasons["environ.txt"]
    named = TextFiles([tree / "environ.txt"])
    assert texts(named) == []
    assert "pseudo-file" in named.skipped[0].reason


def test_missing_path_is_refused_up_front(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no-such"):
        TextFiles([tmp_path / "no-such"])


def test_cli_lists_every_skip_and_exits_3(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sqlite_cli_folder(tmp_path, monkeypatch)
    out, err = io.StringIO(), io.StringIO()
    code = main(["ingest", str(tree)], out=out, err=err)
    assert code == EXIT_SKIPPED
    lines = out.getvalue().splitlines()
    assert sum(line.startswith("skipped ") for line in lines) == 5
    assert lines[-1].startswith("2 chunks added, 0 files unchanged, 0 files replaced, 5 files")
    out = io.StringIO()
    assert main(["ingest", str(tree / "a.md")], out=out, err=err) == 0
    assert "secret" not in out.getvalue()


def test_store_clear_lets_another_embedder_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYWRAPAI_STORE__BACKEND", raising=False)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("Refunds take five business days.")
    config = tmp_path / "pywrapai.yaml"
    config.write_text("store:\n  backend: sqlite\n  path: kb/s.db\n")
    out, err = io.StringIO(), io.StringIO()
    assert main(["ingest", str(docs)], out=out, err=err) == 0
    config.write_text(
        "store:\n  backend: sqlite\n  path: kb/s.db\nembedder:\n  provider: hashing\n"
        "  dimension: 64\n"
    )
    err = io.StringIO()
    assert main(["ingest", str(docs)], out=io.StringIO(), err=err) == 2
    assert "store clear" in err.getvalue() and "hashing" in err.getvalue()
    err = io.StringIO()
    assert main(["store", "clear"], out=io.StringIO(), err=err) == 2
    assert "--yes" in err.getvalue()
    out = io.StringIO()
    assert main(["store", "clear", "--yes"], out=out, err=io.StringIO()) == 0
    assert out.getvalue() == "cleared: 1 chunks removed\n"
    assert main(["ingest", str(docs)], out=io.StringIO(), err=io.StringIO()) == 0


def test_store_repair_on_stores_with_nothing_to_repair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Transactional stores (and embedded ones, which clean up on open) repair nothing."""
    sqlite_cli_folder(tmp_path, monkeypatch)
    out, err = io.StringIO(), io.StringIO()
    assert main(["store", "repair"], out=out, err=err) == 0, err.getvalue()
    assert out.getvalue() == "repaired: 0 documents\n"
    err = io.StringIO()
    assert main(["store", "repair", "--older-than", "-1"], out=io.StringIO(), err=err) == 2
    assert "--older-than" in err.getvalue()


@pytest.fixture
def undecodable(tmp_path: Path) -> Path:
    """A folder holding a file and a subfolder whose names are not UTF-8 (Latin-1 bytes)."""
    root = tmp_path / "names"
    root.mkdir()
    (root / "good.txt").write_text("a file with a good name")
    bad = os.path.join(os.fsencode(root), b"caf\xe9.txt")
    with open(bad, "wb") as f:
        f.write(b"a file whose name is Latin-1")
    folder = os.path.join(os.fsencode(root), b"r\xe9sum\xe9s")
    os.mkdir(folder)
    with open(os.path.join(folder, b"inner.txt"), "wb") as f:
        f.write(b"a file in a folder whose name is Latin-1")
    return root


def test_paths_that_are_not_utf8_are_skipped_and_shown_escaped(undecodable: Path) -> None:
    files = TextFiles([undecodable])
    assert texts(files) == ["a file with a good name"]
    shown = sorted(s.source for s in files.skipped)
    assert [Path(s).name for s in shown] == ["caf\\xe9.txt", "inner.txt"]
    assert all(s.encode("utf-8") for s in shown)  # no lone surrogates: printable anywhere
    assert all("not UTF-8" in s.reason and "rename it" in s.reason for s in files.skipped)
    named = TextFiles([os.fsdecode(os.path.join(os.fsencode(undecodable), b"caf\xe9.txt"))])
    assert texts(named) == [] and "rename it" in named.skipped[0].reason


def test_cli_ingest_skips_a_file_name_that_is_not_utf8(
    undecodable: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the whole run stopped with an untyped UnicodeEncodeError from the chunk ids.
    lines = ingest_skipping(undecodable, tmp_path, monkeypatch)
    assert sum(line.startswith("skipped ") and "\\xe9" in line for line in lines) == 2
    assert lines[-1].startswith("1 chunks added, 0 files unchanged, 0 files replaced, 2 files")


@pytest.fixture
def loops(tmp_path: Path) -> Path:
    """A folder with one good file and symbolic link loops: a file, a folder, a cycle of two."""
    root = tmp_path / "loops"
    root.mkdir()
    (root / "good.txt").write_text("the one good file")
    os.symlink("self.txt", root / "self.txt")
    os.symlink("selfdir", root / "selfdir")
    os.symlink("ping.md", root / "pong.md")
    os.symlink("pong.md", root / "ping.md")
    return root


@pytest.mark.parametrize("follow", [False, True])
def test_symlink_loops_are_skipped_with_a_reason(loops: Path, follow: bool) -> None:
    files = TextFiles([loops], follow_symlinks=follow)
    assert texts(files) == ["the one good file"]
    reasons = {Path(s.source).name: s.reason for s in files.skipped}
    assert set(reasons) == {"self.txt", "selfdir", "ping.md", "pong.md"}
    assert all("symbolic link loop" in r for r in reasons.values())
    named = TextFiles([loops / "self.txt"])
    assert texts(named) == [] and "symbolic link loop" in named.skipped[0].reason


def test_cli_ingest_of_a_folder_with_a_link_loop_stores_the_rest(
    loops: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: one self-looping link made `ingest` exit 1 with nothing stored and no summary.
    lines = ingest_skipping(loops, tmp_path, monkeypatch)
    assert sum(line.startswith("skipped ") and "loop" in line for line in lines) == 4
    assert lines[-1].startswith("1 chunks added, 0 files unchanged, 0 files replaced, 4 files")


def test_any_oserror_of_the_walk_skips_that_entry(tmp_path: Path) -> None:
    """A real OSError other than a loop: an entry whose full path is longer than PATH_MAX
    (its folder's path is not), so resolving or opening it fails."""
    root = tmp_path / "deep"
    root.mkdir()
    (root / "good.txt").write_text("the one good file")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    length = len(os.fsencode(root))
    try:
        while length < 3800:
            name = "d" * min(250, 3990 - length - 1)
            os.mkdir(name, dir_fd=fd)
            fd_next = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd, length = fd_next, length + 1 + len(name)
        os.symlink("elsewhere", "l" * 200 + ".txt", dir_fd=fd)
    finally:
        os.close(fd)
    files = TextFiles([root])
    assert texts(files) == ["the one good file"]
    assert len(files.skipped) == 1 and files.skipped[0].reason.startswith("cannot ")
    assert Path(files.skipped[0].source).name == "l" * 200 + ".txt"
