#!/usr/bin/env bash
# Runs ReasoningBank: web (uvicorn, ASGI: dashboard + REST + MCP) and a django-q2 worker, on the
# embedded PostgreSQL unless DATABASE_URL is set. Ctrl-C stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh

export DEBUG="${DEBUG:-true}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
export SITE_URL="${SITE_URL:-http://$HOST:$PORT}"

echo "==> migrating"
.venv/bin/python manage.py migrate --noinput
.venv/bin/python manage.py collectstatic --noinput -v0
.venv/bin/python manage.py setup_schedules

echo "==> starting worker and web"
.venv/bin/python manage.py qcluster &
worker=$!
.venv/bin/uvicorn reasoningbank.asgi:application --host "$HOST" --port "$PORT" --workers "${WEB_WORKERS:-1}" --no-access-log &
web=$!
stop() {
  trap - EXIT INT TERM
  kill "$web" "$worker" 2>/dev/null || true
  # give both a graceful moment (the worker finishes its task), then make sure they are gone
  for _ in $(seq 1 20); do
    kill -0 "$web" 2>/dev/null || kill -0 "$worker" 2>/dev/null || break
    sleep 0.5
  done
  pkill -9 -P "$worker" 2>/dev/null || true
  kill -9 "$web" "$worker" 2>/dev/null || true
}
trap stop EXIT INT TERM

cat <<MSG

  ReasoningBank is starting on $SITE_URL
    dashboard  $SITE_URL/            (sign up at $SITE_URL/accounts/signup/)
    REST API   $SITE_URL/api/v1/     (docs at $SITE_URL/api/docs/)
    MCP        $SITE_URL/mcp
    health     $SITE_URL/healthz

  Create an org, a project and a token for an agent (in another shell):
    .venv/bin/python manage.py create_org acme --plan pro --owner-email you@example.com
    .venv/bin/python manage.py create_project acme web-app
    .venv/bin/python manage.py create_token acme --label laptop --project web-app

MSG
# stop everything as soon as either process exits (or on Ctrl-C)
wait -n "$web" "$worker"
