#!/usr/bin/env bash
# Runs ReasoningBank: web (uvicorn, ASGI: dashboard + REST + MCP) and a django-q2 worker, on the
# embedded PostgreSQL unless DATABASE_URL is set. Ctrl-C (or SIGTERM) stops all of it: web, worker
# and the embedded PostgreSQL of RB_DATA_DIR.
#
# Environment: HOST, PORT, WEB_WORKERS, RB_DATA_DIR, SITE_URL, DEBUG (off unless you export
# DEBUG=true: debug pages show code and settings to whoever can reach the port) and every variable
# of README.md's Configuration table.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh

HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8000}"
export SITE_URL="${SITE_URL:-http://$HOST:$PORT}"
DATA_DIR="${RB_DATA_DIR:-.data}"
mkdir -p "$DATA_DIR"
DATA_DIR="$(cd "$DATA_DIR" && pwd)"
export RB_DATA_DIR="$DATA_DIR"  # absolute: the commands printed below work from any directory
PIDS_FILE="$DATA_DIR/run.pids"

# The processes still alive in process group $1 that are ours (a web or worker of an earlier run).
group_members() {
  ps -eo pgid=,pid=,stat=,args= | awk -v group="$1" '$1 == group && $3 !~ /^Z/ && /qcluster|uvicorn|multiprocessing/ { print $2 }'
}

# Whether process group $1 still has a live process (exited ones nobody reaped do not count).
group_alive() {
  [ -n "$1" ] && ps -eo pgid=,stat= | awk -v group="$1" '$1 == group && $2 !~ /^Z/ { found = 1 } END { exit !found }'
}

# Start "$@" in the background as the leader of its own process group: Ctrl-C reaches only this
# script, which then stops each group in order (the worker finishes its task) and waits for it.
spawn_group() {
  .venv/bin/python -c 'import os, sys; os.setpgid(0, 0); os.execv(sys.argv[1], sys.argv[1:])' "$@" &
}

# A start-up step runs in the background while this script waits for it: bash runs a trap only
# between foreground commands, so Ctrl-C / SIGTERM would otherwise wait for a whole migration.
step_run() {
  "$@" &
  step=$!
  wait "$step"
  step=""
}

web=""
worker=""
step=""
stopping=""
stop() {
  [ -n "$stopping" ] && return
  stopping=1
  echo "==> stopping"
  for pid in $step; do kill -TERM "$pid" 2>/dev/null || true; done  # start-up still running
  # the group leaders first: uvicorn closes its connections, qcluster lets the running task finish
  [ -n "$web" ] && kill -TERM "$web" 2>/dev/null || true
  [ -n "$worker" ] && kill -TERM "$worker" 2>/dev/null || true
  local waited=0
  while group_alive "$web" || group_alive "$worker"; do
    if [ "$waited" -ge 200 ]; then  # 20 s: whatever is left of either group is killed
      echo "==> still running after 20 s: killing"
      [ -n "$web" ] && kill -KILL -- "-$web" 2>/dev/null || true
      [ -n "$worker" ] && kill -KILL -- "-$worker" 2>/dev/null || true
      sleep 0.5
      break
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  wait 2>/dev/null || true
  rm -f "$PIDS_FILE"
  if [ -z "${DATABASE_URL:-}" ]; then
    # normally the last process to exit has stopped it already; not when one had to be killed
    .venv/bin/python -m reasoningbank.embedded_db stop "$DATA_DIR/pg" || true
  fi
  echo "==> stopped"
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM
trap stop EXIT

# Make sure nothing of a previous run with this data dir (say, a killed run.sh) is still running.
if [ -f "$PIDS_FILE" ]; then
  while read -r group; do
    if [ -n "$group" ] && [ -n "$(group_members "$group")" ]; then
      echo "==> stopping what a previous run left behind (process group $group)"
      kill -TERM -- "-$group" 2>/dev/null || true
      sleep 2
      kill -KILL -- "-$group" 2>/dev/null || true
    fi
  done < "$PIDS_FILE"
  rm -f "$PIDS_FILE"
fi

echo "==> migrating"
# one after another: every manage.py process attaches to the embedded server, and two first
# starts at once on a fresh data directory race to create it (FileExistsError)
step_run .venv/bin/python manage.py migrate --noinput
# memories embedded by another model (after a change of EMBEDDER, e.g. the switch of the default from
# hashing to minilm) are re-embedded before serving, with progress; nothing to do on a fresh start
step_run .venv/bin/python manage.py reembed_memories
step_run .venv/bin/python manage.py collectstatic --noinput -v0
step_run .venv/bin/python manage.py setup_schedules

# /metrics sums the counters of every web and worker process from their files here (prometheus-client's
# multiprocess mode, reasoningbank/metrics.py); emptied at each start, as counters start from zero
export PROMETHEUS_MULTIPROC_DIR="$DATA_DIR/prometheus"
mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
find "$PROMETHEUS_MULTIPROC_DIR" -maxdepth 1 -name '*.db' -delete

echo "==> starting worker and web"
spawn_group .venv/bin/python manage.py qcluster
worker=$!
# uvicorn's own lines in the same format as the app's (JSON unless DEBUG or LOG_FORMAT=plain); the
# app writes one access line per request itself, with its request id, org and token prefix. No proxy
# headers: the app believes X-Forwarded-For only from TRUSTED_PROXIES (reasoningbank/asgi_guards.py)
spawn_group .venv/bin/uvicorn reasoningbank.asgi:application --host "$HOST" --port "$PORT" \
  --workers "${WEB_WORKERS:-1}" --no-access-log --no-proxy-headers --timeout-graceful-shutdown 10 \
  --log-config reasoningbank/uvicorn_logging.json
web=$!
printf '%s\n%s\n' "$worker" "$web" > "$PIDS_FILE"

commands_env=""
[ "$DATA_DIR" != "$PWD/.data" ] && commands_env="RB_DATA_DIR=$DATA_DIR "
cat <<MSG

  ReasoningBank is starting on $SITE_URL   (Ctrl-C stops everything)
    dashboard  $SITE_URL/            (sign up at $SITE_URL/accounts/signup/)
    REST API   $SITE_URL/api/v1/     (docs at $SITE_URL/api/docs/)
    MCP        $SITE_URL/mcp
    health     $SITE_URL/readyz           (metrics at $SITE_URL/metrics, from this machine)
    data       $DATA_DIR   (database, secret key; logs are printed here)

  Create an org, a project and a token for an agent (in another shell, in $PWD):
    ${commands_env}.venv/bin/python manage.py create_org acme --plan pro --owner-email you@example.com
    ${commands_env}.venv/bin/python manage.py create_project acme web-app
    ${commands_env}.venv/bin/python manage.py create_token acme --label laptop --project web-app

MSG
# stop everything as soon as either process exits (or on Ctrl-C / SIGTERM)
status=0
wait -n "$web" "$worker" || status=$?
[ -z "$stopping" ] && echo "==> $( kill -0 "$web" 2>/dev/null && echo worker || echo web ) exited (status $status)"
exit "$status"
