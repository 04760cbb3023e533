"""The module-size gate catches what it exists to catch, and the tree passes it."""

from __future__ import annotations

from pathlib import Path

from scripts.module_sizes import ROOT, main, problems, read_allowlist, shrunk, write_allowlist


def test_a_new_module_over_the_limit_fails() -> None:
    assert problems({"p/a.py": 501, "p/b.py": 500}, {}, limit=500) == [
        "p/a.py has 501 lines (limit 500): split it"
    ]


def test_an_allowlisted_module_may_not_grow() -> None:
    found = problems({"p/big.py": 701}, {"p/big.py": 700}, limit=500)
    assert len(found) == 1 and "grew to 701" in found[0] and "may only shrink" in found[0]
    assert problems({"p/big.py": 700}, {"p/big.py": 700}, limit=500) == []


def test_an_entry_no_longer_needed_must_go() -> None:
    assert problems({"p/big.py": 480}, {"p/big.py": 700}, limit=500) == [
        "p/big.py is gone or under 500 lines: delete its allowlist line"
    ]
    assert "p/gone.py is gone" in problems({}, {"p/gone.py": 700}, limit=500)[0]


def test_update_lowers_and_drops_entries_and_never_adds(tmp_path: Path) -> None:
    path = tmp_path / "allow.txt"
    sizes = {"p/a.py": 650, "p/b.py": 300, "p/new.py": 900}
    write_allowlist(path, sizes, {"p/a.py": 700, "p/b.py": 800})
    assert read_allowlist(path) == {"p/a.py": 650}
    assert shrunk({"p/a.py": 600}, {"p/a.py": 650}) == ["p/a.py: 600 < 650"]


def test_the_package_passes_the_gate() -> None:
    assert (ROOT / "pywrapai_graph").is_dir()
    assert main([]) == 0
