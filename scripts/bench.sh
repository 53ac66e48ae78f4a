#!/usr/bin/env bash
# The standard benchmark run (issue #5): the gateway against its backends
# called directly, on loopback, in one run, with mcpbench alternating rounds
# A B A B ... so both sides see the same machine. Prints ONE table on stdout:
#
#   | scenario | direct req/s | gateway req/s | ratio | p50 added | p99 added | p50 × |
#
#   call-stateful   tools/call echo, stateful backend, `session: per-request`
#   call-stateless  tools/call echo, stateless backend
#   call-reuse      tools/call echo, stateful backend, `session: reuse`
#   call-slow-init  tools/call echo, one worker (c=1), a stateful backend that
#                   holds every initialize 1s (demo-backend --init-delay, as
#                   FastMCP does), the default `session: auto`: a call after
#                   the first, direct vs through the gateway (issue 36)
#   call-slow-init-remote  the same, the backend also holding every request
#                   BENCH_REMOTE_LATENCY (a backend that does I/O or is far
#                   away: the issue's ≤ 1.2× target is about this one)
#   call-slow-init-per-request  call-slow-init with `session: per-request`:
#                   what each call cost before auto was the default
#   list-fanout     tools/list walk over a vhost of 8 backends (B) vs 1 backend (A),
#                   both through the gateway, every backend paging by 2: p50 × is 8/1
#   list-fanout-c1  the same with one worker: the latency of a lone walk, where
#                   the fan-out's concurrency shows (at c=16 two cores are
#                   saturated and latency follows the 8× backend work)
#   list-fanout-cached  list-fanout with `list_cache: 1m` on every backend
#
# and the same with a client of protocol 2026-07-28 (mcpbench -proto
# 2026-07-28: no session, _meta and headers on every request) and backends
# that speak it (go-sdk --stateless, which serves both generations):
#
#   call-modern     tools/call echo, stateless backend, direct vs through the
#                   gateway; modern client on both sides
#   list-fanout-modern, list-fanout-modern-c1, list-fanout-modern-cached,
#   list-fanout-modern-cached-c1
#                   as list-fanout*, over 8 stateless backends vs 1 (the
#                   cached one also with one worker: at c=16 two cores are
#                   saturated and even cached pages cost 6× the bytes)
#   list-fanout-modern-remote-c1
#                   as list-fanout-modern-c1, over backends that hold every
#                   request BENCH_REMOTE_LATENCY (default 10ms) before
#                   serving it: backends far away or doing I/O, whose time
#                   is not spent on this machine's cores, so the latency of
#                   a lone walk shows the fan-out and not two cores shared
#                   by nine servers
#
# and the gateway's own CPU cost: the same tools/call through a bare
# net/http/httputil.ReverseProxy (localdev/cmd/bareproxy, flushing every
# write) as A and through the gateway as B, the CPU per call of each
# middle process read from /proc/<pid>/stat (mcpbench -cpu-pid-a/-b):
#
#   cpu-modern      2026-07-28 client, stateless backend
#   cpu-stateless   2025 session, stateless backend
#   cpu-reuse       2025 session, `session: reuse`
#   cpu-stateful    2025 session, per-request backend sessions
#
# and lists that scale (issue 24): 2026-07-28 tools/list walks through a
# gateway of their own over vhosts of 1, 10 and 50 stateless backends of
# BENCH_LIST_TOOLS (200) extra tools each (demo-backend --extra-tools:
# realistic names, descriptions, input schemas), BENCH_LIST_CONCURRENCY
# (1) workers, A the 1-backend vhost, B the larger one, the gateway's CPU
# per listed item from /proc/<pid>/stat (mcpbench -cpu-pid-a/-b, both the
# same gateway), pages per walk and the bytes of the largest page:
#
#   list-scale-rss          the gateway's RSS idle, then after
#                           BENCH_LIST_RSS_WALKS (100) walks over the 50-backend
#                           vhost (c=BENCH_CONCURRENCY), uncached then cached
#   list-scale-10, list-scale-50                whole walks, 1 vs 10 / 50 backends
#   list-scale-10-cached, list-scale-50-cached  the same with list_cache: 1m
#   list-scale-first, list-scale-first-cached   the first page only (mcpbench
#                           -pages 1), 1 vs 50 backends
#   list-scale-first-1000, list-scale-first-1000-cached  the same, A one
#                           backend of 1,000 tools: pages of the same size
#   list-scale-proxy, list-scale-proxy-1000     A a bare reverse proxy, B the
#                           gateway, each in front of one backend of 203 /
#                           1,000 tools: CPU per item of each middle process
#
# and tool search (issue 42), on the list-scale gateway over 2 and 25 of
# its backends (about 400 and 5,000 tools), each backend with list_cache:
# 1m, A a vhost that lists every tool, B the same backends with
# tool_search; the gateway's CPU per request of each (mcpbench
# -cpu-pid-a/-b, both the same gateway):
#
#   search-400, search-5000  A the first tools/list page, cached (up to
#                           1,000 tools), B one search_tools call
#   search-index            the index's build time and held memory per
#                           tool, and one search, at 400 and 5,000 tools
#                           (go test -bench router/toolsearch), the 5,000
#                           figures as ratios of the 400 ones
#
# then the store traffic per routed request (Redis INFO commandstats; 0 for
# a modern tools/call) and the cost of 10,000 idle sessions (gateway RSS,
# Redis used_memory per session).
#
#   mcpbench ──► demo-backend (direct)
#   mcpbench ──► gateway ──► demo-backend(s)
#                   └── redis
#
# Usage: scripts/bench.sh            (or: make bench)
#
# Environment:
#   BENCH_DURATION      measured time of each round (default 5s)
#   BENCH_WARMUP        warm-up of each round, not counted (default 1s)
#   BENCH_ROUNDS        rounds per side (default 3)
#   BENCH_CONCURRENCY   workers, each with its own session (default 16)
#   BENCH_IDLE_SESSIONS sessions opened for the idle-session figure (default 10000; 0: skip)
#   BENCH_STORE_REQUESTS requests of the larger store-traffic run (default 2000; 0: skip)
#   BENCH_SCENARIOS     which table rows to run (default: all thirty-three, space-separated)
#   BENCH_REMOTE_LATENCY what the remote backends hold each request (default 10ms)
#   BENCH_LIST_TOOLS    extra tools of each list-scale backend (default 200)
#   BENCH_LIST_CONCURRENCY workers of the list-scale comparisons (default 1)
#   BENCH_LIST_RSS_WALKS walks of list-scale-rss, each side (default 100)
#   BENCH_PROFILE       1: take CPU and allocation profiles of the gateway (--debug-listen)
#                       during each cpu-* and list-scale-* scenario, kept as
#                       <scenario>.pprof with its top entries in
#                       <scenario>.top.txt (default: off; profiling costs
#                       the gateway a few percent, so figures of a profiled
#                       run are not the recorded ones)
#   MCPGW_BENCH_CACHE   where binaries and runs go (default .cache/bench)
#   GO                  the go command (default go)
#
# Everything a run produced (config, process logs, each scenario's report
# and JSON) stays in $MCPGW_BENCH_CACHE/<timestamp>; `latest` points to it.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

DURATION=${BENCH_DURATION:-5s}
WARMUP=${BENCH_WARMUP:-1s}
ROUNDS=${BENCH_ROUNDS:-3}
CONC=${BENCH_CONCURRENCY:-16}
IDLE_SESSIONS=${BENCH_IDLE_SESSIONS:-10000}
STORE_REQUESTS=${BENCH_STORE_REQUESTS:-2000}
SCENARIOS=${BENCH_SCENARIOS:-call-stateful call-stateless call-reuse call-slow-init call-slow-init-remote call-slow-init-per-request list-fanout list-fanout-c1 list-fanout-cached call-modern list-fanout-modern list-fanout-modern-c1 list-fanout-modern-cached list-fanout-modern-cached-c1 list-fanout-modern-remote-c1 cpu-modern cpu-stateless cpu-reuse cpu-stateful list-scale-rss list-scale-10 list-scale-50 list-scale-10-cached list-scale-50-cached list-scale-first list-scale-first-cached list-scale-first-1000 list-scale-first-1000-cached list-scale-proxy list-scale-proxy-1000 search-400 search-5000 search-index}
REMOTE_LATENCY=${BENCH_REMOTE_LATENCY:-10ms}
LIST_TOOLS=${BENCH_LIST_TOOLS:-200}
LIST_CONC=${BENCH_LIST_CONCURRENCY:-1}
LIST_RSS_WALKS=${BENCH_LIST_RSS_WALKS:-100}
LIST_MAX=50 # backends of the largest list-scale vhost (also 1 and 10)
FANOUT=8
PAGE_SIZE=2
GO=${GO:-go}
MODERN=2026-07-28 # mcpbench -proto: the sessionless protocol

CACHE=${MCPGW_BENCH_CACHE:-.cache/bench}
mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
BIN=$CACHE/bin
RUN=$CACHE/$(date +%Y%m%d-%H%M%S)
mkdir -p "$BIN" "$RUN"
ln -sfn "$RUN" "$CACHE/latest"
# Keep the ten most recent runs.
{ ls -1d "$CACHE"/2* 2>/dev/null | head -n -10 | xargs -r rm -rf; } || true

TOOL=bench
# shellcheck source=lib/processes.sh
source "$ROOT/scripts/lib/processes.sh"
T0=$SECONDS
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------------------
# 1. Binaries.
# ---------------------------------------------------------------------------
log "go build ./cmd/gateway ./cmd/mcpbench ./localdev/cmd/demo-backend ./localdev/cmd/bareproxy"
"$GO" build -o "$BIN/" ./cmd/gateway ./cmd/mcpbench ./localdev/cmd/demo-backend ./localdev/cmd/bareproxy || die "go build failed"
command -v redis-server >/dev/null || die "redis-server not found (apt-get install redis-server)"
command -v redis-cli >/dev/null || die "redis-cli not found (apt-get install redis-tools)"
MCPBENCH=$BIN/mcpbench

# ---------------------------------------------------------------------------
# 2. Processes (started with lib/processes.sh: stopped on exit).
# ---------------------------------------------------------------------------

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# debug_flags: --debug-listen on a free port when BENCH_PROFILE is set;
# sets DEBUG_ADDR (empty when off).
debug_flags() {
  DEBUG_ADDR= DEBUG_FLAGS=()
  [ -n "${BENCH_PROFILE:-}" ] || return 0
  local p
  for _ in 1 2 3 4 5; do
    p=$((20000 + RANDOM % 40000))
    port_free "$p" && { DEBUG_ADDR=127.0.0.1:$p; DEBUG_FLAGS=(--debug-listen "$DEBUG_ADDR"); return 0; }
  done
  die "no free port for --debug-listen"
}

# Redis: no persistence, loopback only, on a free port (retried if taken
# between the check and the bind).
for attempt in 1 2 3 4 5; do
  REDIS_PORT=$((20000 + RANDOM % 40000))
  port_free "$REDIS_PORT" || continue
  start redis redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no
  REDIS_PID=$LAST_PID
  for _ in $(seq 100); do
    log_has redis "Ready to accept connections" && break 2
    kill -0 "$REDIS_PID" 2>/dev/null || break
    sleep 0.1
  done
  [ "$attempt" = 5 ] && { tail -n 5 "$RUN/redis.log" >&2; die "redis-server did not start (log: $RUN/redis.log)"; }
done
rcli() { redis-cli -p "$REDIS_PORT" "$@"; }
log "redis on 127.0.0.1:$REDIS_PORT"

# backend <name> [demo-backend flags]: starts a demo backend on a free port
# and sets URL to its MCP endpoint.
backend() {
  local name=$1; shift
  start "$name" "$BIN/demo-backend" --listen 127.0.0.1:0 --name "$name" "$@"
  wait_for "$name" "$LAST_PID" log_has "$name" "listening on http://"
  URL=$(listen_url "$name")
}
backend stateful; B_STATEFUL=$URL
backend stateless --stateless; B_STATELESS=$URL
backend reuse; B_REUSE=$URL
backend slowinit --init-delay 1s; B_SLOWINIT=$URL
backend slowinit-remote --init-delay 1s --latency "$REMOTE_LATENCY"; B_SLOWINIT_REMOTE=$URL
FAN=()
for i in $(seq "$FANOUT"); do
  backend "fan$i" --page-size "$PAGE_SIZE"; FAN+=("$URL")
done
# The modern fan-out: backends that speak 2026-07-28 (go-sdk stateless).
MFAN=()
for i in $(seq "$FANOUT"); do
  backend "mfan$i" --stateless --page-size "$PAGE_SIZE"; MFAN+=("$URL")
done
# The remote fan-out: the same, each request held REMOTE_LATENCY.
RFAN=()
for i in $(seq "$FANOUT"); do
  backend "rfan$i" --stateless --page-size "$PAGE_SIZE" --latency "$REMOTE_LATENCY"; RFAN+=("$URL")
done
log "$((5 + 3 * FANOUT)) demo backends up"

{
  echo "# Generated by scripts/bench.sh"
  echo "auth:"
  echo "  mode: none"
  echo "virtual_hosts:"
  echo "  stateful:   {backends: {echo: {url: \"$B_STATEFUL\", session: per-request}}}"
  echo "  stateless:  {backends: {echo: {url: \"$B_STATELESS\"}}}"
  echo "  reuse:      {backends: {echo: {url: \"$B_REUSE\", session: reuse}}}"
  echo "  slowinit:   {backends: {echo: {url: \"$B_SLOWINIT\"}}}"
  echo "  slowinit-remote: {backends: {echo: {url: \"$B_SLOWINIT_REMOTE\"}}}"
  echo "  slowinit-pr: {backends: {echo: {url: \"$B_SLOWINIT\", session: per-request}}}"
  echo "  fan1:       {backends: {b1: {url: \"${FAN[0]}\"}}}"
  echo "  fan$FANOUT:"
  echo "    backends:"
  for i in $(seq "$FANOUT"); do echo "      b$i: {url: \"${FAN[i - 1]}\"}"; done
  echo "  cfan1:      {backends: {b1: {url: \"${FAN[0]}\", list_cache: 1m}}}"
  echo "  cfan$FANOUT:"
  echo "    backends:"
  for i in $(seq "$FANOUT"); do echo "      b$i: {url: \"${FAN[i - 1]}\", list_cache: 1m}"; done
  echo "  # 2026-07-28: the stateless backend again (its own vhost, for the store"
  echo "  # traffic figure), and the fan-out over stateless backends"
  echo "  modern:     {backends: {echo: {url: \"$B_STATELESS\"}}}"
  echo "  mfan1:      {backends: {b1: {url: \"${MFAN[0]}\"}}}"
  echo "  mfan$FANOUT:"
  echo "    backends:"
  for i in $(seq "$FANOUT"); do echo "      b$i: {url: \"${MFAN[i - 1]}\"}"; done
  echo "  mcfan1:     {backends: {b1: {url: \"${MFAN[0]}\", list_cache: 1m}}}"
  echo "  mcfan$FANOUT:"
  echo "    backends:"
  for i in $(seq "$FANOUT"); do echo "      b$i: {url: \"${MFAN[i - 1]}\", list_cache: 1m}"; done
  echo "  # 2026-07-28 fan-out over backends $REMOTE_LATENCY away"
  echo "  rfan1:      {backends: {b1: {url: \"${RFAN[0]}\"}}}"
  echo "  rfan$FANOUT:"
  echo "    backends:"
  for i in $(seq "$FANOUT"); do echo "      b$i: {url: \"${RFAN[i - 1]}\"}"; done
} >"$RUN/gateway.yaml"

debug_flags
start gateway "$BIN/gateway" --config "$RUN/gateway.yaml" --listen 127.0.0.1:0 \
  --redis-url "redis://127.0.0.1:$REDIS_PORT" --log-level warn --reload-interval 0 "${DEBUG_FLAGS[@]}"
GATEWAY_PID=$LAST_PID GATEWAY_DEBUG=$DEBUG_ADDR
wait_for gateway "$GATEWAY_PID" log_has gateway "mcpgw: listening on http://"
GW=$(listen_url gateway)
log "gateway on $GW (pid $GATEWAY_PID); started in $((SECONDS - T0))s; logs in $RUN"

# The bare reverse proxy: the baseline of the cpu-* scenarios.
start bareproxy "$BIN/bareproxy" --listen 127.0.0.1:0 \
  --route "/stateful=$B_STATEFUL" --route "/stateless=$B_STATELESS" --route "/reuse=$B_REUSE"
PROXY_PID=$LAST_PID
wait_for bareproxy "$PROXY_PID" log_has bareproxy "bareproxy: listening on http://"
PROXY=$(listen_url bareproxy)

# The list-scale gateway: its own process, so that its CPU and memory are
# those of the list-scale walks alone, over LIST_MAX backends of LIST_TOOLS
# extra tools (started only when a list-scale scenario runs).
case " $SCENARIOS " in *" list-scale"* | *" search-4"* | *" search-5"*)
  LS=()
  for i in $(seq "$LIST_MAX"); do
    backend "ls$i" --stateless --extra-tools "$LIST_TOOLS"; LS+=("$URL")
  done
  # One backend of 1,000 tools (max_page_items): a first page the size of
  # the 50-backend vhost's.
  backend ls-1000 --stateless --extra-tools 997; LS_1000=$URL
  log "$LIST_MAX list-scale backends up ($LIST_TOOLS extra tools each), and one of 1,000 tools"
  {
    echo "# Generated by scripts/bench.sh: the list-scale scenarios"
    echo "auth:"
    echo "  mode: none"
    echo "virtual_hosts:"
    for n in 1 10 "$LIST_MAX"; do
      for c in "" c; do
        echo "  ${c}ls$n:"
        echo "    backends:"
        for i in $(seq "$n"); do
          if [ -n "$c" ]; then echo "      b$i: {url: \"${LS[i - 1]}\", list_cache: 1m}"; else echo "      b$i: {url: \"${LS[i - 1]}\"}"; fi
        done
      done
    done
    # Tool search over 2 and 25 backends: A lists every tool, B searches.
    for n in 2 25; do
      for v in cls ts; do
        echo "  $v$n:"
        [ "$v" = ts ] && echo "    tool_search: {}"
        echo "    backends:"
        for i in $(seq "$n"); do echo "      b$i: {url: \"${LS[i - 1]}\", list_cache: 1m}"; done
      done
    done
    echo "  ls1000:     {backends: {b1: {url: \"$LS_1000\"}}}"
    echo "  cls1000:    {backends: {b1: {url: \"$LS_1000\", list_cache: 1m}}}"
  } >"$RUN/gateway-lists.yaml"
  debug_flags
  start gateway-lists "$BIN/gateway" --config "$RUN/gateway-lists.yaml" --listen 127.0.0.1:0 \
    --redis-url "redis://127.0.0.1:$REDIS_PORT" --log-level warn --reload-interval 0 "${DEBUG_FLAGS[@]}"
  LSGW_PID=$LAST_PID LSGW_DEBUG=$DEBUG_ADDR
  wait_for gateway-lists "$LSGW_PID" log_has gateway-lists "mcpgw: listening on http://"
  LSGW=$(listen_url gateway-lists)
  sleep 2 # discovery of every backend, then idle
  LS_RSS_IDLE=$(awk '$1=="VmRSS:"{print $2}' "/proc/$LSGW_PID/status")
  log "list-scale gateway on $LSGW (pid $LSGW_PID), idle RSS $((LS_RSS_IDLE / 1024)) MiB"
  # The baseline of list-scale-proxy*: a bare reverse proxy in front of
  # the one-backend vhosts' backends, relaying the same pages.
  start bareproxy-lists "$BIN/bareproxy" --listen 127.0.0.1:0 --route "/ls1=${LS[0]}" --route "/ls1000=$LS_1000"
  LSPROXY_PID=$LAST_PID
  wait_for bareproxy-lists "$LSPROXY_PID" log_has bareproxy-lists "bareproxy: listening on http://"
  LSPROXY=$(listen_url bareproxy-lists)
  ;;
esac

# ---------------------------------------------------------------------------
# 3. The table: each scenario is one mcpbench comparison, A = direct, B = gateway.
# ---------------------------------------------------------------------------
QUIET=-quiet
[ -t 2 ] && QUIET= # the progress line, rewritten in place, on a terminal only

# seconds <duration>: whole seconds of a Go duration such as 5s or 500ms
seconds() { awk -v d="$1" 'BEGIN { if (d ~ /ms$/) print int(d / 1000); else if (d ~ /m$/) print int(d) * 60; else print int(d) }'; }

# compare <scenario> <A url> <B url> [mcpbench flags]; PROFILE_FROM, when
# set, is the debug address of the gateway to profile meanwhile.
compare() {
  local name=$1 a=$2 b=$3 prof=; shift 3
  log "$name: $ROUNDS rounds of $DURATION (+$WARMUP warm-up) per side"
  if [ -n "${PROFILE_FROM:-}" ]; then
    # The whole comparison: both sides' rounds (the gateway is idle
    # during a bare proxy's).
    local secs=$(( (2 * ROUNDS * ($(seconds "$DURATION") + $(seconds "$WARMUP"))) ))
    curl -sf -o "$RUN/$name.allocs-before.pprof" "http://$PROFILE_FROM/debug/pprof/allocs" || true
    curl -sf -o "$RUN/$name.pprof" "http://$PROFILE_FROM/debug/pprof/profile?seconds=$secs" &
    prof=$!
  fi
  "$MCPBENCH" $QUIET -c "$CONC" -d "$DURATION" -warmup "$WARMUP" -rounds "$ROUNDS" \
    -json "$RUN/$name.json" "$@" "$a" "$b" >"$RUN/$name.txt" ||
    { cat "$RUN/$name.txt" >&2; die "$name failed"; }
  sed 's/^/    /' "$RUN/$name.txt" >&2
  ROWS+=("$name=$RUN/$name.json")
  if [ -n "$prof" ]; then
    wait "$prof" || die "$name: the profile from $PROFILE_FROM failed"
    # What the scenario allocated: the heap profile's totals, less those
    # before it (go tool pprof -sample_index=alloc_space -base ...).
    curl -sf -o "$RUN/$name.allocs.pprof" "http://$PROFILE_FROM/debug/pprof/allocs" || true
    "$GO" tool pprof -top -nodecount 30 "$BIN/gateway" "$RUN/$name.pprof" >"$RUN/$name.top.txt" 2>/dev/null || true
    log "$name: CPU profile $RUN/$name.pprof (top: $RUN/$name.top.txt)"
  fi
}

# list_rss: the list-scale gateway's RSS idle (after its start), then after
# LIST_RSS_WALKS walks over the LIST_MAX-backend vhost at c=CONC, uncached
# then cached; VmHWM is the process's peak.
LIST_RSS_LINE=
list_rss() {
  local status=/proc/$LSGW_PID/status v out=() rss hwm
  for v in "ls$LIST_MAX" "cls$LIST_MAX"; do
    log "list-scale-rss: $LIST_RSS_WALKS walks over $v (c=$CONC)"
    "$MCPBENCH" -quiet -workload list -proto "$MODERN" -c "$CONC" -warmup 0 -n "$LIST_RSS_WALKS" \
      -json "$RUN/list-scale-rss-$v.json" "$LSGW/servers/$v/mcp" >"$RUN/list-scale-rss-$v.txt" ||
      { cat "$RUN/list-scale-rss-$v.txt" >&2; die "list-scale-rss over $v failed"; }
    sed 's/^/    /' "$RUN/list-scale-rss-$v.txt" >&2
    sleep 2 # let the gateway settle (GC, idle connections)
    rss=$(awk '$1=="VmRSS:"{print $2}' "$status"); hwm=$(awk '$1=="VmHWM:"{print $2}' "$status")
    out+=("$(awk -v v="$v" -v r="$rss" -v h="$hwm" -v i="$LS_RSS_IDLE" -v n="$LIST_RSS_WALKS" -v c="$CONC" \
      'BEGIN {printf "after %d walks over %s (c=%d): %.1f MiB (%+.1f MiB), peak %.1f MiB", n, v, c, r/1024, (r-i)/1024, h/1024}')")
  done
  LIST_RSS_LINE="list-scale-rss: gateway RSS (VmRSS; peak: VmHWM since start) idle $(awk -v i="$LS_RSS_IDLE" 'BEGIN {printf "%.1f MiB", i/1024}'); $(printf '%s; ' "${out[@]}" | sed 's/; $//')"
}

# search_index: the index's costs at 400 and 5,000 tools (router/toolsearch
# benchmarks); sets SEARCH_INDEX_LINE.
SEARCH_INDEX_LINE=
search_index() {
  log "search-index: go test -bench 'BenchmarkIndex|BenchmarkRank' ./router/toolsearch"
  "$GO" test -run '^$' -bench 'BenchmarkIndex|BenchmarkRank' -benchtime 10x ./router/toolsearch/ >"$RUN/search-index.txt" ||
    { cat "$RUN/search-index.txt" >&2; die "search-index failed"; }
  SEARCH_INDEX_LINE=$(awk '
    /^Benchmark(Index|Rank)\/tools=/ {
      split($1, a, "="); n = a[2]; sub(/-[0-9]+$/, "", n)
      for (i = 2; i <= NF; i++) {
        if ($1 ~ /^BenchmarkIndex/ && $i == "ns/tool") build[n] = $(i-1)
        if ($1 ~ /^BenchmarkIndex/ && $i == "B/tool") mem[n] = $(i-1)
        if ($1 ~ /^BenchmarkRank/ && $i == "ns/op") rank[n] = $(i-1)
      }
    }
    END {
      printf "search-index: build %.1f µs/tool at 400 tools, %.1f µs/tool at 5,000 (×%.2f per tool); ", build[400]/1000, build[5000]/1000, build[5000]/build[400]
      printf "held %.0f B/tool at 400, %.0f B/tool at 5,000 (×%.2f per tool); ", mem[400], mem[5000], mem[5000]/mem[400]
      printf "one search %.0f µs at 400, %.0f µs at 5,000 (in process, no HTTP)", rank[400]/1000, rank[5000]/1000
    }' "$RUN/search-index.txt")
}

ROWS=()
for s in $SCENARIOS; do
  PROFILE_FROM=
  case $s in cpu-*) PROFILE_FROM=${GATEWAY_DEBUG:-} ;; list-scale-[0-9fp]*) PROFILE_FROM=${LSGW_DEBUG:-} ;; esac
  case $s in
  call-stateful) compare "$s" "$B_STATEFUL" "$GW/servers/stateful/mcp" ;;
  call-stateless) compare "$s" "$B_STATELESS" "$GW/servers/stateless/mcp" ;;
  call-reuse) compare "$s" "$B_REUSE" "$GW/servers/reuse/mcp" ;;
  call-slow-init) compare "$s" "$B_SLOWINIT" "$GW/servers/slowinit/mcp" -c 1 ;;
  call-slow-init-remote) compare "$s" "$B_SLOWINIT_REMOTE" "$GW/servers/slowinit-remote/mcp" -c 1 ;;
  call-slow-init-per-request) compare "$s" "$B_SLOWINIT" "$GW/servers/slowinit-pr/mcp" -c 1 ;;
  list-fanout) compare "$s" "$GW/servers/fan1/mcp" "$GW/servers/fan$FANOUT/mcp" -workload list ;;
  list-fanout-c1) compare "$s" "$GW/servers/fan1/mcp" "$GW/servers/fan$FANOUT/mcp" -workload list -c 1 ;;
  list-fanout-cached) compare "$s" "$GW/servers/cfan1/mcp" "$GW/servers/cfan$FANOUT/mcp" -workload list ;;
  call-modern) compare "$s" "$B_STATELESS" "$GW/servers/modern/mcp" -proto "$MODERN" ;;
  list-fanout-modern) compare "$s" "$GW/servers/mfan1/mcp" "$GW/servers/mfan$FANOUT/mcp" -workload list -proto "$MODERN" ;;
  list-fanout-modern-c1) compare "$s" "$GW/servers/mfan1/mcp" "$GW/servers/mfan$FANOUT/mcp" -workload list -c 1 -proto "$MODERN" ;;
  list-fanout-modern-cached) compare "$s" "$GW/servers/mcfan1/mcp" "$GW/servers/mcfan$FANOUT/mcp" -workload list -proto "$MODERN" ;;
  list-fanout-modern-cached-c1) compare "$s" "$GW/servers/mcfan1/mcp" "$GW/servers/mcfan$FANOUT/mcp" -workload list -c 1 -proto "$MODERN" ;;
  list-fanout-modern-remote-c1) compare "$s" "$GW/servers/rfan1/mcp" "$GW/servers/rfan$FANOUT/mcp" -workload list -c 1 -proto "$MODERN" ;;
  cpu-modern) compare "$s" "$PROXY/stateless" "$GW/servers/modern/mcp" -proto "$MODERN" -cpu-pid-a "$PROXY_PID" -cpu-pid-b "$GATEWAY_PID" ;;
  cpu-stateless) compare "$s" "$PROXY/stateless" "$GW/servers/stateless/mcp" -cpu-pid-a "$PROXY_PID" -cpu-pid-b "$GATEWAY_PID" ;;
  cpu-reuse) compare "$s" "$PROXY/reuse" "$GW/servers/reuse/mcp" -cpu-pid-a "$PROXY_PID" -cpu-pid-b "$GATEWAY_PID" ;;
  cpu-stateful) compare "$s" "$PROXY/stateful" "$GW/servers/stateful/mcp" -cpu-pid-a "$PROXY_PID" -cpu-pid-b "$GATEWAY_PID" ;;
  list-scale-rss) list_rss ;;
  list-scale-10 | list-scale-50 | list-scale-10-cached | list-scale-50-cached | list-scale-first | list-scale-first-cached | list-scale-first-1000 | list-scale-first-1000-cached)
    n=${s#list-scale-}; n=${n%-cached}; c=; a=1; flags=()
    case $s in *-cached) c=c ;; esac
    case $n in first-1000) a=1000 ;& first) n=$LIST_MAX; flags=(-pages 1) ;; esac
    compare "$s" "$LSGW/servers/${c}ls$a/mcp" "$LSGW/servers/${c}ls$n/mcp" -workload list -proto "$MODERN" -c "$LIST_CONC" \
      -cpu-pid-a "$LSGW_PID" -cpu-pid-b "$LSGW_PID" "${flags[@]}" ;;
  list-scale-proxy | list-scale-proxy-1000)
    n=1; case $s in *-1000) n=1000 ;; esac
    compare "$s" "$LSPROXY/ls$n" "$LSGW/servers/ls$n/mcp" -workload list -proto "$MODERN" -c "$LIST_CONC" \
      -cpu-pid-a "$LSPROXY_PID" -cpu-pid-b "$LSGW_PID" ;;
  search-400 | search-5000)
    n=2; [ "$s" = search-5000 ] && n=25
    compare "$s" "$LSGW/servers/cls$n/mcp" "$LSGW/servers/ts$n/mcp" -workload list -pages 1 -proto "$MODERN" -c "$LIST_CONC" \
      -b-workload call -b-tool search_tools -b-args '{"query":"search the open issues of a project"}' \
      -cpu-pid-a "$LSGW_PID" -cpu-pid-b "$LSGW_PID" ;;
  search-index) search_index; continue ;;
  *) die "unknown scenario $s (BENCH_SCENARIOS)" ;;
  esac
done

# ---------------------------------------------------------------------------
# 4. Store traffic per routed request: Redis counters around two runs of
#    different lengths; the difference divided by the difference in requests
#    leaves out what does not scale with requests (initialize, DELETE,
#    background work).
# ---------------------------------------------------------------------------
# store_snapshot <file>: "total <n>", "reads <n>" and "<command> <calls>" lines
store_snapshot() {
  {
    rcli INFO stats | tr -d '\r' | awk -F: '$1=="total_commands_processed"{print "total", $2} $1=="total_reads_processed"{print "reads", $2}'
    rcli INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),.*/\1 \2/p'
  } >"$1"
}
# store_delta <before> <after> <out>: after - before per key
store_delta() {
  awk 'NR==FNR{b[$1]=$2; next} {d=$2-b[$1]; if (d) print $1, d}' "$1" "$2" >"$3"
}

STORE_LINES=()
store_traffic() { # store_traffic <label> <vhost> [mcpbench flags]
  local label=$1 vhost=$2 small=$((STORE_REQUESTS / 4)) url="$GW/servers/$2/mcp" d=$RUN/store-${1//[^a-zA-Z0-9]/-}
  shift 2
  store_snapshot "$d.0"
  "$MCPBENCH" -quiet -c "$CONC" -warmup 0 -n "$small" -json "$d.small.json" "$@" "$url" >/dev/null || die "store run on $vhost failed"
  store_snapshot "$d.1"
  "$MCPBENCH" -quiet -c "$CONC" -warmup 0 -n "$STORE_REQUESTS" -json "$d.large.json" "$@" "$url" >/dev/null || die "store run on $vhost failed"
  store_snapshot "$d.2"
  store_delta "$d.0" "$d.1" "$d.small"
  store_delta "$d.1" "$d.2" "$d.large"
  # (large - small) / (STORE_REQUESTS - small), per key, largest first
  awk -v n=$((STORE_REQUESTS - small)) 'NR==FNR{s[$1]=$2; next} {l[$1]=$2}
    END { for (k in l) s[k] = s[k]; for (k in s) printf "%s %.4f\n", k, (l[k] - s[k]) / n }' \
    "$d.small" "$d.large" | sort -k2,2nr -k1,1 >"$d.per-request"
  STORE_LINES+=("$(awk -v label="$label" '
    $1=="total"{total=$2; next} $1=="reads"{reads=$2; next}
    $2 >= 0.005 || $2 <= -0.005 {by = by sprintf("%s%s %.2f", by == "" ? "" : ", ", tolower($1), $2)}
    END {printf "| %s | %.2f | %.2f | %s |", label, total, reads, by == "" ? "none" : by}' "$d.per-request")")
}
if [ "$STORE_REQUESTS" -gt 0 ]; then
  log "store traffic: $((STORE_REQUESTS / 4)) then $STORE_REQUESTS requests per vhost, Redis counters around each"
  for v in stateful stateless reuse; do store_traffic "$v" "$v"; done
  store_traffic "modern (2026-07-28)" modern -proto "$MODERN"
  # A tools/list walk of 2 pages over 8 backends: the first page's cursor is
  # signed with the key kept in the store (no cursor_secret_env here).
  store_traffic "mfan$FANOUT (2026-07-28, tools/list walk)" "mfan$FANOUT" -proto "$MODERN" -workload list
fi

# ---------------------------------------------------------------------------
# 5. Idle sessions: open many sessions through the gateway (initialize only,
#    never deleted) and see what they cost the gateway process and Redis.
#    Twice: the first batch also grows the heap to the high-water mark of a
#    32-way initialize burst; what a second batch adds is what sessions
#    themselves cost the process (nothing, for a stateless gateway).
# ---------------------------------------------------------------------------
rss_kb() { awk '$1=="VmRSS:"{print $2}' "/proc/$GATEWAY_PID/status"; }
redis_mem() { rcli INFO memory | tr -d '\r' | awk -F: '$1=="used_memory"{print $2}'; }
idle_batch() { # idle_batch <n>: sets RSS, MEM, KEYS after the batch, TOOK_MS
  local t0
  t0=$(date +%s%N)
  "$MCPBENCH" -quiet -workload init -c 32 -warmup 0 -n "$IDLE_SESSIONS" -json "$RUN/idle-sessions-$1.json" \
    "$GW/servers/stateful/mcp" >"$RUN/idle-sessions-$1.txt" || { cat "$RUN/idle-sessions-$1.txt" >&2; die "idle sessions failed"; }
  TOOK_MS=$((($(date +%s%N) - t0) / 1000000))
  sleep 2 # let the gateway settle (GC, idle connections)
  RSS=$(rss_kb); MEM=$(redis_mem); KEYS=$(rcli DBSIZE)
}
IDLE_LINE=
if [ "$IDLE_SESSIONS" -gt 0 ]; then
  log "idle sessions: opening 2 × $IDLE_SESSIONS through the gateway (c=32)"
  rss0=$(rss_kb); mem0=$(redis_mem); keys0=$(rcli DBSIZE)
  idle_batch 1; rss1=$RSS mem1=$MEM keys1=$KEYS took=$TOOK_MS
  idle_batch 2; rss2=$RSS
  IDLE_LINE=$(awk -v n="$IDLE_SESSIONS" -v r0="$rss0" -v r1="$rss1" -v r2="$rss2" -v m0="$mem0" -v m1="$mem1" \
    -v k0="$keys0" -v k1="$keys1" -v s="$took" 'BEGIN {
    printf "%d idle sessions (initialize only, c=32, opened in %.1fs): ", n, s / 1000
    printf "gateway RSS %.1f MB → %.1f MB (%+.1f MB), %d more: → %.1f MB (%+.1f MB, %.0f bytes/session); ", r0/1024, r1/1024, (r1-r0)/1024, n, r2/1024, (r2-r1)/1024, (r2-r1)*1024/n
    printf "Redis used_memory %+.1f MB = %.0f bytes/session, %.2f keys/session", (m1-m0)/1048576, (m1-m0)/n, (k1-k0)/n }')
fi

# ---------------------------------------------------------------------------
# 6. The report: stdout, and $RUN/table.md.
# ---------------------------------------------------------------------------
{
  echo "mcpbench standard run, $(date -u '+%Y-%m-%d %H:%M UTC'), tree $(git describe --always --dirty 2>/dev/null || echo '?')"
  echo "$(nproc) CPUs ($(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo)), $(free -h | awk '/^Mem:/{print $2}') RAM, $("$GO" env GOVERSION), redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), loopback; load average $LOAD0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo "c=$CONC, $ROUNDS rounds × $DURATION (+$WARMUP warm-up) per side, alternating A B A B; medians of the per-round ratios"
  echo
  if [ ${#ROWS[@]} -gt 0 ]; then
    "$MCPBENCH" summary "${ROWS[@]}"
    case " $SCENARIOS " in *" list-fanout"*)
      echo
      echo "list-fanout: \"direct\" = a gateway vhost of 1 backend, \"gateway\" = a vhost of $FANOUT backends (each paging by $PAGE_SIZE); p50 × is the latency ratio $FANOUT/1; list-fanout-c1 runs one worker; list-fanout-cached has list_cache: 1m on every backend of both vhosts." ;;
    esac
    case " $SCENARIOS " in *"-modern"*)
      echo
      echo "*-modern*: client and backends speak $MODERN (no session; backends go-sdk stateless); call-modern's \"direct\" is the backend called by the same modern client; -c1 runs one worker; -remote's backends hold every request $REMOTE_LATENCY." ;;
    esac
  fi
  if [ ${#STORE_LINES[@]} -gt 0 ]; then
    echo
    echo "Store traffic per routed request, tools/call unless said (Redis counters, difference of a $((STORE_REQUESTS / 4))- and a $STORE_REQUESTS-request run):"
    echo
    echo "| vhost | commands | socket reads (≈ round trips) | by command |"
    echo "| --- | ---: | ---: | --- |"
    printf '%s\n' "${STORE_LINES[@]}"
  fi
  case " $SCENARIOS " in *" list-scale-"[0-9f]*)
    echo
    echo "list-scale-*: $MODERN tools/list walks through a gateway of their own (max_page_items 1000), c=$LIST_CONC; A = a vhost of 1 stateless backend, B = of 10 or $LIST_MAX; each backend lists $LIST_TOOLS extra tools and the demo's 3; -cached: list_cache: 1m on every backend; -first: the first page only, -first-1000 with A one backend of 1,000 tools; figures A → B, gateway CPU per item from /proc/<pid>/stat over each measured window." ;;
  esac
  case " $SCENARIOS " in *" list-scale-proxy"*)
    echo
    echo "list-scale-proxy*: the same walks, A = a bare net/http/httputil.ReverseProxy (flushing every write), B = the list-scale gateway, each in front of the same one backend of $((LIST_TOOLS + 3)) (-1000: 1,000) tools; CPU per item of each middle process." ;;
  esac
  case " $SCENARIOS " in *" search-4"* | *" search-5"*)
    echo
    echo "search-*: on the list-scale gateway, A = the first $MODERN tools/list page (cached: list_cache 1m) of a vhost of 2 / 25 backends ($((2 * (LIST_TOOLS + 3))) / $((25 * (LIST_TOOLS + 3))) tools), B = one search_tools call on the same backends with tool_search (its index built once, kept for the list_cache TTL); the gateway's CPU per request of each, c=$LIST_CONC." ;;
  esac
  if [ -n "$SEARCH_INDEX_LINE" ]; then
    echo
    echo "$SEARCH_INDEX_LINE"
  fi
  if [ -n "$LIST_RSS_LINE" ]; then
    echo
    echo "$LIST_RSS_LINE"
  fi
  if [ -n "$IDLE_LINE" ]; then
    echo
    echo "$IDLE_LINE"
  fi
} | tee "$RUN/table.md"
log "done in $((SECONDS - T0))s; reports and JSON in $RUN"
