"""What masking secrets costs per message: our compiled patterns against detect-secrets.

Both mask the same texts: a tool's one-line error holding a key (the common case, on every
failed tool call), and a 64 KiB error body (a traceback or an HTML error page, the largest
a tool result may be by default) with a few keys in it. detect-secrets (Yelp, 1.5) scans a
string line by line with ``scan_line``, with every plugin but its two high-entropy ones
(which, in this ad-hoc mode, report nearly every word: "in", "line", "chunk") and its
default filters, set once outside the timing; it reports values, not positions, so each
value it reports is then replaced wherever it occurs. The table also counts which of the
common secret forms (``tests/secret_forms.py``) each leaves readable, and how many ordinary
lines (ids, digests, dotted names) each changes.

Run: .venv/bin/python -m benchmarks.redaction
"""

from __future__ import annotations

from collections.abc import Callable

from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.core.scan import scan_line
from detect_secrets.settings import transient_settings

from benchmarks._table import best_of, print_table
from pywrapai_graph.redaction import MASK, redact
from tests.secret_forms import FORMS, GITHUB, JWT, SLACK

SHORT = f"tool 'deploy' failed: git push rejected for {GITHUB} (403)"
ORDINARY = [
    "chunk 3f2504e0-4f89-11d3-9a0c-0305e82c3301 of doc 9b74c9897bac770ffc029102a200c5de",
    "commit 0123456789abcdef0123456789abcdef01234567 at 2026-12-07T07:30:37Z",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 (0 bytes)",
    "pywrapai_graph.adapters.vectorstores.qdrant.store.QdrantVectorStore.add failed",
    '  File "/srv/app/handlers/deploy.py", line 88, in push_release',
]


def _long_text() -> str:
    lines = [ORDINARY[i % len(ORDINARY)] + f" #{i}" for i in range(800)]
    for i, secret in enumerate((GITHUB, SLACK, JWT)):
        lines[200 * (i + 1)] += f" auth {secret}"
    return "\n".join(lines)[: 64 * 1024]


def _detect_secrets(text: str) -> str:
    for line in text.splitlines():
        for found in scan_line(line):
            if found.secret_value:
                text = text.replace(found.secret_value, MASK)
    return text


def _missed(mask: Callable[[str], str]) -> int:
    return sum(secret in mask(text) for text, secret, _ in FORMS)


def _changed(mask: Callable[[str], str]) -> int:
    return sum(mask(line) != line for line in ORDINARY)


def _plugins() -> list[dict[str, str]]:
    """Every detect-secrets plugin but the high-entropy ones."""
    kinds: list[type] = list(get_mapping_from_secret_type_to_class().values())
    names = [kind.__name__ for kind in kinds]
    return [{"name": name} for name in names if "HighEntropy" not in name]


def _timed(mask: Callable[[str], str], text: str, repeat: int, number: int) -> float:
    return best_of(lambda: mask(text), repeat=repeat, number=number)


def main() -> None:
    long_text = _long_text()
    with transient_settings({"plugins_used": _plugins()}):
        rows: list[tuple[str, float, float]] = []
        for label, text, number in (("one-line tool error", SHORT, 200), ("64 KiB", long_text, 3)):
            ours = _timed(redact, text, 7, number)
            theirs = _timed(_detect_secrets, text, 3, max(1, number // 20))
            rows += [
                (f"{label}: redact() (anchor)", ours, 1.0),
                (f"{label}: detect-secrets scan_line + replace", theirs, theirs / ours),
            ]
        missed_theirs, changed_theirs = _missed(_detect_secrets), _changed(_detect_secrets)
    print_table("Masking secrets in error text (per message)", rows, unit="ms")
    print(
        f"\ncommon secret forms left readable (of {len(FORMS)}): redact {_missed(redact)}, "
        f"detect-secrets {missed_theirs}"
    )
    print(
        f"ordinary lines changed (of {len(ORDINARY)}): redact {_changed(redact)}, "
        f"detect-secrets {changed_theirs}"
    )


if __name__ == "__main__":
    main()
