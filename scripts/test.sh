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
# (--dist loadgroup) while the others take the rest; without, beside the workers in processes of their
# own (below). `-n 0` runs everything in this one process. The workers' databases and the serial
# process's are copies of one build (tests/database_template.py).
set -euo pipefail
cd "$(dirname "$0")/.."
parallel=(--numprocesses=auto --maxprocesses=4 --dist=loadgroup)
./scripts/bootstrap.sh
./scripts/ensure-pgbouncer.sh
./scripts/ensure-ts-client.sh
# pytest's exit status 5 is "no tests collected": arguments that select none of one of the two runs below
ran() {
  "$@" && return 0
  local code=$?
  [ "$code" -eq 5 ] && return 0
  return "$code"
}
if [ "${1:-}" = fast ]; then
  shift
  # the tests marked serial after the workers, in a process of their own, as in the whole run: beside
  # another worker's tests, the sixty concurrent asks met "too many clients" (503 database_unavailable)
  status=0
  ran .venv/bin/python -m pytest "${parallel[@]}" -m "(pure or database) and not serial" "$@" || status=$?
  ran .venv/bin/python -m pytest --numprocesses=0 -m "(pure or database) and serial" "$@" || status=$?
  exit "$status"
fi
./scripts/ensure-chromium.sh
# the OpenID Connect and SAML identity providers the single sign-on tests sign in at (tests/sso_idps.py)
./scripts/ensure-test-idps.sh
checks() {
  # the django-stubs plugin imports the settings: DEBUG=1 spares it a SECRET_KEY
  DEBUG=1 .venv/bin/mypy .
  # the import rules (docs/architecture.md#the-never-arrows; contracts in pyproject.toml [tool.importlinter])
  .venv/bin/lint-imports --no-cache
}
if [ $# -gt 0 ]; then
  checks
  exec .venv/bin/python -m pytest "${parallel[@]}" "$@"
fi
# The whole suite in two pytest runs at once, each with its own output (a run's figures:
# docs/contributing.md#running-the-tests):
# * the pure, database and browser tiers on the workers, then the tests marked serial (more database
#   connections at once than two workers may share) in a process of their own;
# * beside them, the end-to-end tier in a process of its own, the shared service's tests in their order
#   (tests/e2e/conftest.py): inside a pytest-xdist worker, schemathesis (through Hypothesis parsing its own
#   source) once failed with "AST constructor recursion depth mismatch", which it never did in a process of
#   its own.
# The end-to-end process waits on its services much of the time (each service on a PostgreSQL of its own,
# none on the workers'), and the workers have the cores meanwhile. It starts first, before the type check;
# its output is printed when it is done (artifacts/e2e.log keeps it). Not split further: its tests that
# start services of their own (two machines on one database, the worker-fairness flood) beside the shared
# service's ran past pytest-timeout's 300 s on a loaded machine.
mkdir -p artifacts
e2e=""
cleanup() {
  # a stopped run (Ctrl-C) stops the end-to-end process too: SIGTERM, which it takes as Ctrl-C
  # (tests/suite_plugin.py; a background job of a script ignores SIGINT), so its fixtures stop what they
  # started (services, PostgreSQL servers, PgBouncers); waited for
  if [ -n "$e2e" ]; then
    kill -TERM "$e2e" 2>/dev/null || true
    wait "$e2e" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# its own cache directory: pytest's record of the last failures is written by each process at its end
.venv/bin/python -m pytest --numprocesses=0 -m e2e -o cache_dir=.pytest_cache/e2e > artifacts/e2e.log 2>&1 &
e2e=$!
# the type check and the import rules while the end-to-end process starts its service; a failure stops
# the run here (and the end-to-end process with it)
checks
status=0
.venv/bin/python -m pytest "${parallel[@]}" -m "not e2e and not serial" || status=$?
.venv/bin/python -m pytest --numprocesses=0 -m serial || status=$?
e2e_status=0
wait "$e2e" || e2e_status=$?
e2e=""
echo "===== the end-to-end tier (artifacts/e2e.log) ====="
cat artifacts/e2e.log
[ "$e2e_status" -eq 0 ] || status=$e2e_status
exit "$status"
