#!/usr/bin/env bash
# The PgBouncer tests run Debian's pgbouncer in transaction pooling in front of a test PostgreSQL
# (docs/operations.md#pgbouncer-in-transaction-pooling): installed here when missing, like chromium.
set -euo pipefail
PGBOUNCER="${PGBOUNCER_PATH:-/usr/sbin/pgbouncer}"
if [ -x "$PGBOUNCER" ]; then exit 0; fi
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
  echo "PgBouncer is missing at $PGBOUNCER and cannot be installed without root; install Debian's 'pgbouncer' package" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "==> installing Debian's pgbouncer for the connection-pooler tests"
$SUDO apt-get update -qq
# the package's own service is not wanted: the tests start their own pgbouncer on a free port
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends pgbouncer >/dev/null
