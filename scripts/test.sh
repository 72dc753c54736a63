#!/usr/bin/env bash
# Runs the whole test suite: unit, database (embedded PostgreSQL + pgvector), MCP over HTTP with the
# official SDK client, and browser tests in Debian's Chromium (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
./scripts/ensure-chromium.sh
.venv/bin/python -m pytest "$@"
