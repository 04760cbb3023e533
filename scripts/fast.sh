#!/usr/bin/env bash
# The inner loop: unit and contract tests without the ones measured slow
# (tests/slow_tests.txt, written by scripts/slow_tests.py). The whole suite is scripts/test.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m pytest -q -p no:cacheprovider tests/unit tests/contract -m "not slow" "$@"
