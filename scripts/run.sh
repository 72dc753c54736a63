#!/usr/bin/env bash
# Runs ReasoningBank: web (uvicorn, ASGI: dashboard + REST + MCP), a django-q2 worker and the webhook
# worker (a second django-q2 cluster with its own queue: slow webhook receivers never hold the slots
# sessions and consolidation runs need, docs/security/worker-fairness.md), on the embedded PostgreSQL
# unless DATABASE_URL is set. Ctrl-C (or SIGTERM) stops all of it: web, both workers and the embedded
# PostgreSQL of RB_DATA_DIR.
#
# It supervises them: a web or worker process that dies, or the embedded PostgreSQL, is started
# again after 1 s, 2 s, 4 s ... (at most RB_RESTART_DELAY_MAX), one log line each time, the others
# left running. A process that dies again and again within RB_RESTART_STABLE_SECONDS of its start
# (RB_RESTART_MAX_FAST_FAILURES times in a row) is a configuration or code problem, not bad luck:
# run.sh then says so and stops everything, exit status 1 (docs/operations.md).
#
# Environment: HOST, PORT, WEB_WORKERS, RB_DATA_DIR, SITE_URL, DEBUG (off unless you export
# DEBUG=true: debug pages show code and settings to whoever can reach the port), the RB_RESTART_*
# above and every variable of docs/configuration.md.
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
echo "$SITE_URL" > "$DATA_DIR/site_url"  # for commands typed in another shell (their links)
RESTART_MAX_FAST_FAILURES="${RB_RESTART_MAX_FAST_FAILURES:-5}"
RESTART_STABLE_SECONDS="${RB_RESTART_STABLE_SECONDS:-60}"
RESTART_DELAY_MAX="${RB_RESTART_DELAY_MAX:-30}"
for setting in RESTART_MAX_FAST_FAILURES RESTART_STABLE_SECONDS RESTART_DELAY_MAX; do
  if ! [[ "${!setting}" =~ ^[1-9][0-9]*$ ]]; then
    echo "RB_$setting must be a whole number above 0, got '${!setting}'" >&2
    exit 2
  fi
done

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
  # The child makes itself a group leader only once its Python is up (a second under load); until then
  # a kill of its group (a stop, a restart, whoever reads run.pids) would miss it. Back once it is one.
  local pid=$! waited=0
  while [ "$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')" != "$pid" ] && kill -0 "$pid" 2>/dev/null \
    && [ "$waited" -lt 200 ]; do
    sleep 0.05
    waited=$((waited + 1))
  done
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
webhooks=""
step=""
stopping=""
stop() {
  [ -n "$stopping" ] && return
  stopping=1
  echo "==> stopping"
  for pid in $step; do kill -TERM "$pid" 2>/dev/null || true; done  # start-up still running
  # a web still waiting for the start-up step: let it go on, to see uvicorn's SIGTERM and exit at once
  [ -n "${start_gate:-}" ] && touch "$start_gate" 2>/dev/null || true
  # the group leaders first: uvicorn closes its connections, qcluster lets the running task finish
  [ -n "$web" ] && kill -TERM "$web" 2>/dev/null || true
  [ -n "$worker" ] && kill -TERM "$worker" 2>/dev/null || true
  [ -n "$webhooks" ] && kill -TERM "$webhooks" 2>/dev/null || true
  local waited=0
  while group_alive "$web" || group_alive "$worker" || group_alive "$webhooks"; do
    if [ "$waited" -ge 200 ]; then  # 20 s: whatever is left of any group is killed
      echo "==> still running after 20 s: killing"
      [ -n "$web" ] && kill -KILL -- "-$web" 2>/dev/null || true
      [ -n "$worker" ] && kill -KILL -- "-$worker" 2>/dev/null || true
      [ -n "$webhooks" ] && kill -KILL -- "-$webhooks" 2>/dev/null || true
      sleep 0.5
      break
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  # anything else started (a restart the signal interrupted, the supervisor's sleep)
  for pid in $(jobs -p); do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
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

start_postgres() {
  step_run .venv/bin/python -m reasoningbank.embedded_db start "$DATA_DIR/pg"
}
if [ -z "${DATABASE_URL:-}" ]; then
  # first, and kept running through the next step and for web and worker: each start and stop of it
  # costs a second or two (on a fresh data directory it is created here, initdb)
  echo "==> starting the embedded PostgreSQL"
  start_postgres
fi
# Migrations, re-embedding, static files and schedules in one process (each manage.py process pays
# the Python and Django set-up again), each only when not done yet: docs/operations.md#what-happens-at-start.
# Before web and worker: they must not serve or work on a database that is not migrated yet.
# /metrics sums the counters of every web and worker process from their files here (prometheus-client's
# multiprocess mode, reasoningbank/metrics.py); emptied at each start, as counters start from zero
export PROMETHEUS_MULTIPROC_DIR="$DATA_DIR/prometheus"
mkdir -p "$PROMETHEUS_MULTIPROC_DIR"
find "$PROMETHEUS_MULTIPROC_DIR" -maxdepth 1 -name '*.db' -delete

start_worker() {
  spawn_group .venv/bin/python manage.py qcluster
  worker=$!
}
# The webhook worker: the same command on the queue django-q2 names by Q_CLUSTER_NAME (WEBHOOKS_CLUSTER in
# reasoningbank/settings/webhooks.py; its processes: WEBHOOK_WORKERS). Deliveries are queued there only.
WEBHOOKS_CLUSTER=reasoningbank-webhooks
start_webhooks() {
  Q_CLUSTER_NAME="$WEBHOOKS_CLUSTER" spawn_group .venv/bin/python manage.py qcluster
  webhooks=$!
}
start_web() {
  # uvicorn's own lines in the same format as the app's (JSON unless DEBUG or LOG_FORMAT=plain); the
  # app writes one access line per request itself, with its request id, org and token prefix. No proxy
  # headers: the app believes X-Forwarded-For only from TRUSTED_PROXIES (reasoningbank/asgi_guards.py).
  # Idle connections are kept longer than clients keep theirs (httpx, under the MCP Python SDK: 5 s, as
  # uvicorn's default): at equal timeouts a client sends on a connection the server is closing and gets
  # a reset (docs/configuration.md#runsh)
  spawn_group .venv/bin/uvicorn reasoningbank.asgi:application --host "$HOST" --port "$PORT" \
    --workers "${WEB_WORKERS:-1}" --no-access-log --no-proxy-headers --timeout-graceful-shutdown 10 \
    --timeout-keep-alive "${WEB_KEEP_ALIVE:-15}" \
    --log-config reasoningbank/uvicorn_logging.json
  web=$!
}
pids_write() {
  # whole or not at all (a rename): the file is read while a restart rewrites it. One process group a
  # line: worker, web, webhook worker (docs/operations.md)
  printf '%s\n%s\n%s\n' "$worker" "$web" "$webhooks" > "$PIDS_FILE.new"
  mv -f "$PIDS_FILE.new" "$PIDS_FILE"
}

# Web starts now and imports its code while the next step runs; it opens its port only once that step
# succeeded and this file exists (RB_START_GATE, reasoningbank/asgi.py). The worker starts after that
# step too: neither works on a database that is not migrated yet.
start_gate="$DATA_DIR/run.prepared"
rm -f "$start_gate"
mkdir -p staticfiles  # filled by the next step; whitenoise warns at start about a folder that is not there
echo "==> starting web (it listens once the next step is done)"
export RB_START_GATE="$start_gate"
start_web
pids_write
echo "==> preparing: migrations, embeddings, static files, schedules"
step_run .venv/bin/python manage.py prepare_service
echo "==> starting the worker and the webhook worker"
start_worker
start_webhooks
pids_write  # before web listens: whoever reaches the service finds every group in run.pids
touch "$start_gate"
declare -A started_at=([worker]=$SECONDS [web]=$SECONDS [webhooks]=$SECONDS [postgres]=$SECONDS) fast_failures=()

commands_env=""
[ "$DATA_DIR" != "$PWD/.data" ] && commands_env="RB_DATA_DIR=$DATA_DIR "
# printed once /readyz answers 200 (the supervision loop below asks it), so every link works when shown
banner() {
  cat <<MSG

  ReasoningBank is ready at $SITE_URL/   (started in ${SECONDS}s; Ctrl-C stops everything)
    dashboard  $SITE_URL/            (sign up at $SITE_URL/accounts/signup/)
    REST API   $SITE_URL/api/v1/     (docs at $SITE_URL/api/docs/)
    MCP        $SITE_URL/mcp
    health     $SITE_URL/readyz           (metrics at $SITE_URL/metrics, from this machine)
    data       $DATA_DIR   (database, secret key; logs are printed here)

  Create an org, a project and a token for an agent (in another shell, in $PWD):
    ${commands_env}.venv/bin/python manage.py create_org acme --owner-email you@example.com
    ${commands_env}.venv/bin/python manage.py create_project acme web-app
    ${commands_env}.venv/bin/python manage.py create_token acme --label laptop --project web-app

MSG
}

# /readyz as run.sh sees it: "<status> <failing parts>" ("200 " when ready), empty when nothing answers.
# bash's own /dev/tcp: no curl needed. Sent to the address web listens on (loopback for a wildcard) with
# SITE_URL's host in the Host header, the name ALLOWED_HOSTS lets through.
probe_host="$HOST"
case "$probe_host" in 0.0.0.0|"") probe_host=127.0.0.1 ;; "::"|"[::]") probe_host=::1 ;; esac
probe_host="${probe_host#[}"; probe_host="${probe_host%]}"
site_host="${SITE_URL#*://}"; site_host="${site_host%%/*}"
readyz_probe() {
  local fd response="" status="" failing=""
  { exec {fd}<>"/dev/tcp/$probe_host/$PORT"; } 2>/dev/null || return 0  # not listening (yet)
  printf 'GET /readyz HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n' "$site_host" >&"$fd" 2>/dev/null || true
  IFS= read -r -d '' -t 10 response <&"$fd" || true  # the whole answer: the server closes the connection
  exec {fd}>&-
  [[ "$response" =~ ^HTTP/[0-9.]+\ ([0-9]+) ]] && status="${BASH_REMATCH[1]}"
  [[ "$response" =~ \"failing\":\ *\[([^]]*)\] ]] && failing="${BASH_REMATCH[1]//\"/}"
  [ -n "$status" ] && echo "$status $failing"
  return 0
}
ready=""
not_ready_said=""
web_first_started=$SECONDS
ready_check() {
  local answer
  answer="$(readyz_probe)"
  if [ "${answer%% *}" = 200 ]; then
    ready=1
    banner
  elif [ -n "$answer" ] && [ -z "$not_ready_said" ] && [ $((SECONDS - web_first_started)) -ge 60 ]; then
    not_ready_said=1
    echo "==> not ready yet: $SITE_URL/readyz answers ${answer%% *}, failing: ${answer#* } (see its JSON); the line with the links follows once it answers 200"
  fi
}

# --- supervision: until Ctrl-C / SIGTERM, a process that died is started again -----------------------

# Whether the embedded PostgreSQL of the data directory runs (its postmaster.pid names a live process).
postgres_alive() {
  local pid state
  pid="$(head -n 1 "$DATA_DIR/pg/postmaster.pid" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  state="$(ps -o stat= -p "$pid" 2>/dev/null || true)"
  [ -n "$state" ] && [ "${state#Z}" = "$state" ]  # an exited postmaster nobody reaped is dead too
}

# "killed by SIGKILL" / "exited with status 1", from a status as `wait` gives it.
death_text() {
  if [ "$1" -gt 128 ]; then
    echo "killed by SIG$(kill -l "$(($1 - 128))" 2>/dev/null || echo "$(($1 - 128))")"
  else
    echo "exited with status $1"
  fi
}

# Whatever is left of a dead process group (its leader died alone, say uvicorn's master with its
# workers still bound to the port) is stopped before the new one starts.
group_clear() {
  [ -n "$1" ] || return 0
  group_alive "$1" || return 0
  kill -TERM -- "-$1" 2>/dev/null || true
  local waited=0
  while group_alive "$1" && [ "$waited" -lt 50 ]; do sleep 0.1; waited=$((waited + 1)); done
  kill -KILL -- "-$1" 2>/dev/null || true
}

# $1 (web, worker, webhooks, postgres) died ($2 says how): one line, then a restart after the backoff; after
# RESTART_MAX_FAST_FAILURES deaths in a row, each within RESTART_STABLE_SECONDS of its start, stop.
restart() {
  local name="$1" how="$2" ran delay failures
  ran=$((SECONDS - started_at[$name]))
  failures=$(( ran >= RESTART_STABLE_SECONDS ? 1 : ${fast_failures[$name]:-0} + 1 ))
  fast_failures[$name]=$failures
  if [ "$failures" -gt "$RESTART_MAX_FAST_FAILURES" ]; then
    echo "==> $name $how ${ran}s after its start: $failures deaths in a row within ${RESTART_STABLE_SECONDS}s of a start, more than RB_RESTART_MAX_FAST_FAILURES=$RESTART_MAX_FAST_FAILURES; giving up, stopping everything (see the lines above)"
    exit 1
  fi
  delay=$(( 1 << (failures - 1) ))
  [ "$delay" -gt "$RESTART_DELAY_MAX" ] && delay=$RESTART_DELAY_MAX
  echo "==> $name $how after ${ran}s: restarting it in ${delay}s (restart $failures; gives up after $RESTART_MAX_FAST_FAILURES in a row within ${RESTART_STABLE_SECONDS}s of a start)"
  sleep "$delay" &
  wait $! 2>/dev/null || true
  started_at[$name]=$SECONDS
  case "$name" in
    worker) group_clear "$worker"; start_worker; pids_write ;;
    webhooks) group_clear "$webhooks"; start_webhooks; pids_write ;;
    web) group_clear "$web"; start_web; pids_write ;;
    postgres) start_postgres || true ;;  # not up yet: the next round sees it and backs off further
  esac
}

status=0
while :; do
  # every second once ready; five times a second until then, so the ready line comes without delay
  if [ -n "$ready" ]; then sleep 1 & else sleep 0.2 & fi
  # a signal's trap runs here at once; bash's own "Killed ..." notice of a dead job is not printed
  # (the restart's line says it)
  wait $! 2>/dev/null || true
  if [ -z "${DATABASE_URL:-}" ] && ! postgres_alive; then
    restart postgres "stopped"  # first: web and worker cannot work without it
    continue
  fi
  for name in worker web webhooks; do
    pid="${!name}"
    kill -0 "$pid" 2>/dev/null && continue
    status=0
    wait "$pid" 2>/dev/null || status=$?
    restart "$name" "$(death_text "$status")"
  done
  [ -z "$ready" ] && ready_check
done
