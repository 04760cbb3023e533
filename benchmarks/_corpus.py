"""A real text corpus for the benchmarks: Debian's documentation sources, when installed.

``apt-get install python3.11-doc linux-doc-6.1`` puts thousands of reStructuredText sources
(``*.rst.txt``) under ``/usr/share/doc``; without them the benchmarks say so and stop.
"""

from __future__ import annotations

from pathlib import Path

ROOTS = (
    Path("/usr/share/doc/python3.11/html/_sources"),
    Path("/usr/share/doc/linux-doc-6.1/html/_sources"),
)


def corpus_files() -> list[Path]:
    """Every ``*.rst.txt`` under the installed roots, in a stable order."""
    files = [p for root in ROOTS if root.is_dir() for p in sorted(root.rglob("*.rst.txt"))]
    if not files:
        raise SystemExit(
            "no corpus: apt-get install python3.11-doc linux-doc-6.1 (reStructuredText sources)"
        )
    return files


def real_text(megabytes: int) -> tuple[str, str]:
    """About ``megabytes`` MB of the corpus's files joined by blank lines, and its origin."""
    parts: list[str] = []
    size = 0
    files = corpus_files()
    used = 0
    while size < megabytes * 1_000_000:
        for path in files:
            text = path.read_text(encoding="utf-8", errors="replace")
            parts.append(text)
            size += len(text) + 2
            used += 1
            if size >= megabytes * 1_000_000:
                break
    roots = sorted({root.parts[4] for root in ROOTS if root.is_dir()})
    return "\n\n".join(parts), f"{used:,} .rst.txt of {'+'.join(roots)}"
