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
# end-to-end tests share one running service and run in their order: with arguments, on one worker
# (--dist loadgroup) while the others take the rest; without, after the others, in a process of their
# own (below). `-n 0` runs everything in this one process.
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
# the OpenID Connect and SAML identity providers the single sign-on tests sign in at (tests/sso_idps.py)
./scripts/ensure-test-idps.sh
# the django-stubs plugin imports the settings: DEBUG=1 spares it a SECRET_KEY
DEBUG=1 .venv/bin/mypy .
# the import rules (docs/architecture.md#the-never-arrows; contracts in pyproject.toml [tool.importlinter])
.venv/bin/lint-imports --no-cache
if [ $# -gt 0 ]; then
  exec .venv/bin/python -m pytest "${parallel[@]}" "$@"
fi
# The whole suite: every tier but the end-to-end one on the workers, then that one and the tests marked
# serial (more database connections at once than two workers may share) in this process: inside a
# pytest-xdist worker, schemathesis (through Hypothesis parsing its own source) once failed with "AST
# constructor recursion depth mismatch", which it never did in a process of its own.
status=0
.venv/bin/python -m pytest "${parallel[@]}" -m "not e2e and not serial" || status=$?
.venv/bin/python -m pytest --numprocesses=0 -m "e2e or serial" || status=$?
exit "$status"
