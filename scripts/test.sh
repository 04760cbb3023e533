#!/usr/bin/env bash
# The whole suite: import-linter contracts, mypy --strict, ruff, then pytest.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
[ -x "$PY" ] || { echo "run scripts/setup.sh first" >&2; exit 2; }
fail=0
step() { echo "== $1"; shift; "$@" || { echo "!! failed: $*"; fail=1; }; }
step "import-linter contracts" .venv/bin/lint-imports
step "mypy --strict (package and tests)" "$PY" -m mypy
step "ruff check" "$PY" -m ruff check .
step "ruff format --check" "$PY" -m ruff format --check .
step "docs site (mkdocs build --strict)" env NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet --site-dir "${TMPDIR:-/tmp}/pywrapai-site"
step "module sizes (500 lines; allowlist may only shrink)" "$PY" scripts/module_sizes.py
echo "== pytest (two workers, each with its own servers; a file's tests stay on one worker)"
"$PY" -m pytest -n 2 --dist loadfile "$@"
rc=$?
if [ $rc -eq 5 ]; then
  echo "!! pytest collected no tests: that is a failure"
  rc=1
fi
[ $rc -ne 0 ] && fail=1
exit $fail
