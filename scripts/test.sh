#!/usr/bin/env bash
# Runs the whole test suite: the type check (mypy), the import-layer contracts (import-linter), then
# unit, database (embedded PostgreSQL + pgvector), MCP over HTTP with the official SDK client, and
# browser tests in Debian's Chromium and the connection-pooler tests behind Debian's PgBouncer (both
# installed here when missing). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
./scripts/ensure-chromium.sh
./scripts/ensure-pgbouncer.sh
./scripts/ensure-ts-client.sh
# the django-stubs plugin imports the settings: DEBUG=1 spares it a SECRET_KEY
DEBUG=1 .venv/bin/mypy .
# the import rules (docs/architecture.md#the-never-arrows; contracts in pyproject.toml [tool.importlinter])
.venv/bin/lint-imports --no-cache
.venv/bin/python -m pytest "$@"
