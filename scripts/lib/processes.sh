# Shared by scripts/bench.sh and scripts/conformance.sh: logging, and the
# background processes a run starts, each recorded and stopped on exit.
# Set TOOL (the log prefix) and RUN (the run's log folder) before sourcing.

if [ -t 2 ]; then
  log() { printf '\033[1m%s:\033[0m %s\n' "$TOOL" "$*" >&2; }
else
  log() { printf '%s: %s\n' "$TOOL" "$*" >&2; }
fi
die() { log "error: $*"; exit 1; }

PIDS=()
cleanup() {
  local rc=$? i pid
  [ ${#PIDS[@]} -gt 0 ] && log "stopping ${#PIDS[@]} processes"
  # Newest first: what was started last (gateways, proxies) stops while
  # what it depends on (Redis, backends) is still there.
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    pid=${PIDS[i]}
    kill -TERM "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do # up to 5s for a graceful stop, then SIGKILL
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start <name> <cmd...>: runs cmd in the background, output in $RUN/<name>.log
start() {
  local name=$1; shift
  "$@" >"$RUN/$name.log" 2>&1 &
  PIDS+=($!)
  LAST_PID=$!
}

# wait_for <name> <pid> <test-command...>: until the test succeeds (20s max)
wait_for() {
  local name=$1 pid=$2; shift 2
  for _ in $(seq 200); do
    "$@" && return 0
    kill -0 "$pid" 2>/dev/null || { tail -n 20 "$RUN/$name.log" >&2; die "$name exited during start-up (log: $RUN/$name.log)"; }
    sleep 0.1
  done
  tail -n 20 "$RUN/$name.log" >&2
  die "$name not ready after 20s (log: $RUN/$name.log)"
}
log_has() { grep -qs -- "$2" "$RUN/$1.log"; }
# The URL a process printed in its "...: listening on http://ADDR" line.
listen_url() { grep -m1 -o "listening on http://[^ ]*" "$RUN/$1.log" | sed 's/^listening on //'; }
