"""The module-size gate: no package module over 500 lines, but an allowlist that may shrink.

Run: ``python scripts/module_sizes.py`` (part of the README's test command). It fails when

- a module not on the allowlist has more than ``LIMIT`` lines;
- an allowlisted module has grown past the size the allowlist records for it;
- an allowlisted module is back under the limit, or gone: its line must be deleted.

A module that shrank below its recorded size is reported so the allowlist is lowered with it
(``--update`` rewrites the file with today's sizes, dropping what no longer needs a line; it
never adds a module).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 500
ALLOWLIST = ROOT / "scripts" / "module_size_allowlist.txt"


def line_counts(package: Path) -> dict[str, int]:
    """Lines of every ``.py`` file under ``package``, by path relative to its parent."""
    return {
        path.relative_to(package.parent).as_posix(): len(path.read_bytes().splitlines())
        for path in sorted(package.rglob("*.py"))
    }


def read_allowlist(path: Path) -> dict[str, int]:
    """``module lines`` pairs; blank lines and ``#`` comments ignored."""
    allowed: dict[str, int] = {}
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            module, lines = line.split()
            allowed[module] = int(lines)
    return allowed


def problems(sizes: dict[str, int], allowed: dict[str, int], limit: int = LIMIT) -> list[str]:
    """What breaks the gate, one sentence each (empty: it holds)."""
    found: list[str] = []
    for module, lines in sizes.items():
        recorded = allowed.get(module)
        if recorded is None and lines > limit:
            found.append(f"{module} has {lines} lines (limit {limit}): split it")
        elif recorded is not None and lines > recorded:
            found.append(
                f"{module} grew to {lines} lines; the allowlist allows {recorded} and may only "
                "shrink: split it or move code out"
            )
    for module in allowed:
        if sizes.get(module, 0) <= limit:
            found.append(f"{module} is gone or under {limit} lines: delete its allowlist line")
    return found


def shrunk(sizes: dict[str, int], allowed: dict[str, int]) -> list[str]:
    """Allowlisted modules now smaller than recorded (lower their line with ``--update``)."""
    return [
        f"{module}: {sizes[module]} < {recorded}"
        for module, recorded in allowed.items()
        if module in sizes and LIMIT < sizes[module] < recorded
    ]


def write_allowlist(path: Path, sizes: dict[str, int], allowed: dict[str, int]) -> None:
    """Today's sizes of the allowlisted modules still over the limit (none added)."""
    kept = {m: min(sizes[m], n) for m, n in allowed.items() if sizes.get(m, 0) > LIMIT}
    header = "# module lines — may only shrink (scripts/module_sizes.py)\n"
    path.write_text(header + "".join(f"{m} {n}\n" for m, n in sorted(kept.items())), "utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="lower the allowlist to today")
    args = parser.parse_args(argv)
    sizes = line_counts(ROOT / "pywrapai_graph")
    allowed = read_allowlist(ALLOWLIST)
    if args.update:
        write_allowlist(ALLOWLIST, sizes, allowed)
        allowed = read_allowlist(ALLOWLIST)
    for note in shrunk(sizes, allowed):
        print(f"note: shrank, lower its allowlist line (--update): {note}")
    found = problems(sizes, allowed)
    for problem in found:
        print(f"module size: {problem}", file=sys.stderr)
    print(f"module sizes: {len(sizes)} modules, {len(allowed)} allowlisted over {LIMIT} lines")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
