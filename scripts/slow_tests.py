"""Write ``tests/slow_tests.txt``: the unit and contract tests the fast target leaves out.

Run the two suites with every duration reported, then this script on its output::

    .venv/bin/python -m pytest tests/unit tests/contract --durations=0 -q > /tmp/durations.txt
    .venv/bin/python scripts/slow_tests.py /tmp/durations.txt [--threshold SECONDS]

A test whose setup + call + teardown took at least ``--threshold`` seconds is listed; the
test suite's ``conftest.py`` marks the listed tests ``slow``, and the fast target
(``bash scripts/fast.sh``) runs ``-m "not slow"``. The full suite runs every test.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIST = ROOT / "tests" / "slow_tests.txt"
_LINE = re.compile(r"^([0-9.]+)s (?:call|setup|teardown)\s+(\S+)$")


def slow_tests(report: str, threshold: float) -> list[str]:
    """The node ids of ``report`` (pytest ``--durations=0`` output) at or over ``threshold``."""
    spent: dict[str, float] = defaultdict(float)
    for line in report.splitlines():
        match = _LINE.match(line.strip())
        if match:
            spent[match.group(2)] += float(match.group(1))
    return sorted(node for node, seconds in spent.items() if seconds >= threshold)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("report", type=Path, help="pytest --durations=0 output")
    parser.add_argument("--threshold", type=float, default=0.3, help="seconds (default 0.3)")
    args = parser.parse_args(argv)
    nodes = slow_tests(args.report.read_text(encoding="utf-8"), args.threshold)
    header = (
        "# unit/contract tests the fast target skips "
        f"(scripts/slow_tests.py, >= {args.threshold} s)\n"
    )
    LIST.write_text(header + "".join(f"{node}\n" for node in nodes), encoding="utf-8")
    print(f"{len(nodes)} slow tests written to {LIST.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
