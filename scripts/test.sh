#!/usr/bin/env bash
# Runs the whole test suite: the type check (mypy), the import-layer contracts (import-linter), then
# unit, database (embedded PostgreSQL + pgvector), MCP over HTTP with the official SDK client, and
# browser tests in Debian's Chromium and the connection-pooler tests behind Debian's PgBouncer (both
# installed here when missing). Arguments go to pytest.
#
#   ./scripts/test.sh                 everything, on one process per core (at most 4)
#   ./scripts/test.sh fast            the pure and database tiers only, in parallel: no type check, no
#                                     browser, no service started (docs/contributing.md#running-the-tests)
#   ./scripts/test.sh tests/accounts -x   mypy, import-linter, then pytest with these arguments
#
# pytest runs on several processes (pytest-xdist), each on its own test database, kept between runs
# (--reuse-db in pyproject.toml; rebuilt when the migrations change, or with --create-db). The
# end-to-end tests share one running service: they run on one process, in their order (--dist
# loadgroup), while the others take the rest. `-n 0` runs everything in this one process.
set -euo pipefail
cd "$(dirname "$0")/.."
parallel=(--numprocesses=auto --maxprocesses=4 --dist=loadgroup)
./scripts/bootstrap.sh
./scripts/ensure-pgbouncer.sh
./scripts/ensure-ts-client.sh
if [ "${1:-}" = fast ]; then
  shift
  exec .venv/bin/python -m pytest "${parallel[@]}" -m "pure or database" "$@"
fi
./scripts/ensure-chromium.sh
# the django-stubs plugin imports the settings: DEBUG=1 spares it a SECRET_KEY
DEBUG=1 .venv/bin/mypy .
# the import rules (docs/architecture.md#the-never-arrows; contracts in pyproject.toml [tool.importlinter])
.venv/bin/lint-imports --no-cache
.venv/bin/python -m pytest "${parallel[@]}" "$@"
