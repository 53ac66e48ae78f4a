#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance)
# against the gateway, deployed the way production runs it: two gateway
# instances on one Redis behind a round-robin proxy with no affinity, in
# front of a conformance "everything" server: the go-sdk's, or its
# modern-only counterpart (tests/cmd/modern-everything).
#
#   conformance CLI ──► rrproxy ──┬─► gateway #1 ──┬─► everything-server (stateful)
#                                 └─► gateway #2 ──┘
#                                        └── redis ──┘ (sessions, snapshots, bus)
#
# Usage: scripts/conformance.sh          (make conformance runs every combination)
#        REQUIREMENTS=2026-07-28 BACKEND_MODE=stateless scripts/conformance.sh
#        REQUIREMENTS=2025-11-25 BACKEND_MODE=modern-only scripts/conformance.sh
#        SCENARIO=tools-call-sampling scripts/conformance.sh
#
# Environment:
#   MCPGW_CACHE          cache dir for Node, the suite, binaries and run logs
#                        (default: .cache/conformance in the repository)
#   CONFORMANCE_VERSION  suite version, pinned (default 0.2.0-alpha.12)
#   REQUIREMENTS         the requirement set, run at its revision's wire: 2025-11-25
#                        (default: sessions, initialize) or 2026-07-28 (sessionless)
#   BACKEND_MODE         the backend behind the gateway: the go-sdk everything-server
#                        stateful (default; legacy only, can send server-to-client
#                        requests) or stateless (serves both generations), or
#                        modern-only: tests/cmd/modern-everything, the same fixture
#                        over 2026-07-28 alone (refuses initialize and GET; asks with
#                        input_required), so a 2025-11-25 run needs the gateway to
#                        translate; or tasks: tests/cmd/tasks-backend, a 2026-07-28
#                        server implementing the Tasks extension (SEP-2663) with
#                        every fixture tool of the suite's tasks-* scenarios; or
#                        skills: tests/cmd/skills-backend, a go-sdk server of the
#                        Skills extension (SEP-2640) for the sep-2640-* scenarios;
#                        skills-multi: two of them (other skill trees) behind one
#                        vhost, so skill URIs are published skill://{key}/...
#   SCENARIO             run only these scenarios, space-separated; a glob such as
#                        'tasks-*' names every server scenario of the suite it
#                        matches (default: the whole requirement set)
#   GATEWAY_BIN          use this gateway binary instead of building ./cmd/gateway
#   BACKEND_BIN          use this backend binary instead of building it (the
#                        everything-server, or modern-everything for modern-only)
#   RRPROXY_BIN          use this rrproxy binary instead of building ./localdev/cmd/rrproxy
#   BACKEND_SESSION      the backend's `session:` mode in the gateway config
#                        (per-request, the default, or reuse)
#   GATEWAY_LOG_LEVEL    gateway --log-level (default debug: one line per request)
#   SUITE_TIMEOUT        seconds before the whole suite run is killed (default 1800)
#   GATEWAY_INSTANCES    gateway instances behind the proxy (default 2); which
#                        instance gets a tools/call and which gets the client's
#                        reply to its sampling request depends on request order,
#                        so 3 is a useful second opinion (see docs/design/conformance.md)
#   DIRECT=1             baseline: run the suite against the backend itself, with
#                        no gateway, to tell gateway failures from backend ones
#                        (modern-only: REQUIREMENTS=2026-07-28 only; a 2025-11-25
#                        client cannot talk to it)
#
# Exit status: 0 when every check of every scenario passed, 1 otherwise.
# Everything a run produced (config, process logs, the suite's output and
# checks.json per scenario) stays in $MCPGW_CACHE/runs/<timestamp>.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

CACHE=${MCPGW_CACHE:-.cache/conformance}
CONFORMANCE_VERSION=${CONFORMANCE_VERSION:-0.2.0-alpha.12}
REQUIREMENTS=${REQUIREMENTS:-2025-11-25}
BACKEND_MODE=${BACKEND_MODE:-stateful}
# The backend, and its arguments besides -http.
case $BACKEND_MODE in
  stateful) BACKEND_NAME=everything-server BACKEND_ARGS=(-stateless=false) ;;
  stateless) BACKEND_NAME=everything-server BACKEND_ARGS=(-stateless=true) ;;
  modern-only) BACKEND_NAME=modern-everything BACKEND_ARGS=() ;;
  tasks) BACKEND_NAME=tasks-backend BACKEND_ARGS=() ;;
  tasks-tools) BACKEND_NAME=tasks-tools-backend BACKEND_ARGS=(-stateless=true) ;;
  tasks-tools-stateful) BACKEND_NAME=tasks-tools-backend BACKEND_ARGS=(-stateless=false) ;;
  skills|skills-multi) BACKEND_NAME=skills-backend BACKEND_ARGS=(-fixture two) ;;
  *) echo "BACKEND_MODE must be stateful, stateless, modern-only, tasks, tasks-tools, tasks-tools-stateful, skills or skills-multi, not $BACKEND_MODE" >&2; exit 2 ;;
esac
if [ "${DIRECT:-}" = 1 ] && [[ $BACKEND_MODE == tasks-tools* ]]; then
  echo "DIRECT=1 with BACKEND_MODE=$BACKEND_MODE makes no sense: the backend has no tasks of its own; the gateway runs them" >&2
  exit 2
fi
if [ "${DIRECT:-}" = 1 ] && { [ "$BACKEND_MODE" = modern-only ] || [ "$BACKEND_MODE" = tasks ]; } && [ "$REQUIREMENTS" != 2026-07-28 ]; then
  echo "DIRECT=1 with BACKEND_MODE=modern-only needs REQUIREMENTS=2026-07-28: a $REQUIREMENTS client cannot talk to a modern-only server (that is what the gateway is for)" >&2
  exit 2
fi
NODE_MAJOR=22
SCENARIO=${SCENARIO:-}
BACKEND_SESSION=${BACKEND_SESSION:-per-request}
GATEWAY_LOG_LEVEL=${GATEWAY_LOG_LEVEL:-debug}
SUITE_TIMEOUT=${SUITE_TIMEOUT:-1800}
GATEWAY_INSTANCES=${GATEWAY_INSTANCES:-2}
[[ $GATEWAY_INSTANCES =~ ^[1-9][0-9]*$ ]] || { echo "GATEWAY_INSTANCES must be a positive number" >&2; exit 2; }
GO=${GO:-go}
GO_SDK=github.com/modelcontextprotocol/go-sdk

# Checks that cannot pass in a combination, by design, each with the reason
# (scenario/check-id=reason, one per line). They are reported as "known" and
# do not fail the run; one that passes is reported too, so the list stays
# honest. Only the gateway runs have any.
KNOWN_FAILURES=
if [ "${DIRECT:-}" != 1 ] && [ "$REQUIREMENTS" = 2026-07-28 ] && [ "$BACKEND_MODE" = stateful ]; then
  KNOWN_FAILURES="input-required-result-basic-elicitation/sep-2322-elicitation-incomplete=the legacy backend asks with elicitation/create, which carries no input key (its own key, user_name, never leaves the backend), so the gateway names the key"
fi
export KNOWN_FAILURES

mkdir -p "$CACHE"
CACHE=$(cd "$CACHE" && pwd)
NPM_DIR=$CACHE/npm
BIN_DIR=$CACHE/bin
RUN=$CACHE/runs/$(date +%Y%m%d-%H%M%S)
mkdir -p "$BIN_DIR" "$RUN"
ln -sfn "$RUN" "$CACHE/runs/latest"
# Keep the ten most recent runs.
{ ls -1d "$CACHE"/runs/2* 2>/dev/null | head -n -10 | xargs -r rm -rf; } || true

TOOL=conformance
# shellcheck source=lib/processes.sh
source "$ROOT/scripts/lib/processes.sh"

T0=$SECONDS

# ---------------------------------------------------------------------------
# 1. Node 22 and the suite, installed from npm into the cache (reused).
# ---------------------------------------------------------------------------
NODE=$NPM_DIR/node_modules/node/bin/node
SUITE_PKG=$NPM_DIR/node_modules/@modelcontextprotocol/conformance

installed_version() { # prints the installed suite's version, or nothing
  [ -f "$SUITE_PKG/package.json" ] && [ -x "$NODE" ] || return 0
  "$NODE" -p "require('$SUITE_PKG/package.json').version" 2>/dev/null || true
}
node_major() { [ -x "$NODE" ] && "$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null || true; }

if [ "$(node_major)" != "$NODE_MAJOR" ] || [ "$(installed_version)" != "$CONFORMANCE_VERSION" ]; then
  command -v npm >/dev/null || die "npm is required to install Node $NODE_MAJOR and the suite"
  log "installing node@$NODE_MAJOR and @modelcontextprotocol/conformance@$CONFORMANCE_VERSION into $NPM_DIR"
  mkdir -p "$NPM_DIR"
  # node@22 is the Node binary packaged for npm (its install script fetches
  # the platform package); engine warnings come from running npm on older Node.
  npm install --prefix "$NPM_DIR" --save-exact --no-audit --no-fund --loglevel=error \
    "node@$NODE_MAJOR" "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" >&2
  [ "$(node_major)" = "$NODE_MAJOR" ] ||
    die "no Node $NODE_MAJOR at $NODE after npm install (were install scripts blocked? see npm's warnings)"
  [ "$(installed_version)" = "$CONFORMANCE_VERSION" ] || die "suite $CONFORMANCE_VERSION not installed in $SUITE_PKG"
fi
# The suite's bin has a `#!/usr/bin/env node` line: put Node 22 first on PATH.
export PATH="$NPM_DIR/node_modules/.bin:$PATH"
log "node $("$NODE" --version), conformance $(installed_version)"

# ---------------------------------------------------------------------------
# 2. Binaries: the gateway, the backend (the go-sdk conformance server, or
#    ./tests/cmd/modern-everything), the proxy.
# ---------------------------------------------------------------------------
build() { # build <output> <package>
  log "go build $2"
  "$GO" build -o "$1" "$2" || die "building $2 failed (set GATEWAY_BIN/BACKEND_BIN/RRPROXY_BIN to use prebuilt binaries)"
}
GATEWAY_FROM="prebuilt ${GATEWAY_BIN:-}"
if [ -z "${GATEWAY_BIN:-}" ]; then
  GATEWAY_BIN=$BIN_DIR/gateway
  build "$GATEWAY_BIN" ./cmd/gateway
  GATEWAY_FROM="tree at $(git describe --always --dirty 2>/dev/null || echo '?')"
fi
if [ -z "${BACKEND_BIN:-}" ]; then
  BACKEND_BIN=$BIN_DIR/$BACKEND_NAME
  case $BACKEND_NAME in
    everything-server) build "$BACKEND_BIN" "$GO_SDK/conformance/everything-server" ;;
    modern-everything) build "$BACKEND_BIN" ./tests/cmd/modern-everything ;;
    tasks-backend) build "$BACKEND_BIN" ./tests/cmd/tasks-backend ;;
    tasks-tools-backend) build "$BACKEND_BIN" ./tests/cmd/tasks-tools-backend ;;
    skills-backend) build "$BACKEND_BIN" ./tests/cmd/skills-backend ;;
  esac
fi
if [ -z "${RRPROXY_BIN:-}" ]; then RRPROXY_BIN=$BIN_DIR/rrproxy; build "$RRPROXY_BIN" ./localdev/cmd/rrproxy; fi
for b in "$GATEWAY_BIN" "$BACKEND_BIN" "$RRPROXY_BIN" "$(command -v redis-server || echo redis-server)"; do
  [ -x "$b" ] || die "$b: not an executable (redis-server comes with: apt-get install redis-server)"
done

# ---------------------------------------------------------------------------
# 3. Processes (started with lib/processes.sh: stopped on exit).
# ---------------------------------------------------------------------------

free_port() { # a loopback port that was free a moment ago
  "$NODE" -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Redis: no persistence, loopback only.
REDIS_PORT=$(free_port)
start redis redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no
wait_for redis "$LAST_PID" log_has redis "Ready to accept connections"
log "redis on 127.0.0.1:$REDIS_PORT"

# The conformance backend. Stateful, it keeps sessions, so it can send
# server-to-client requests and notifications, and speaks only the legacy
# protocol; stateless, it serves both generations (2026-07-28 requests
# statelessly, legacy ones on ephemeral sessions); modern-only, it serves
# 2026-07-28 alone and refuses the rest (-32022, 405). It serves every path.
BACKEND_PORT=$(free_port)
start backend "$BACKEND_BIN" "${BACKEND_ARGS[@]}" -http "127.0.0.1:$BACKEND_PORT"
wait_for backend "$LAST_PID" port_open "$BACKEND_PORT"
log "$BACKEND_NAME ($BACKEND_MODE) on 127.0.0.1:$BACKEND_PORT"

# One vhost, one backend: identifiers pass through unchanged, which is what
# the suite expects (test_simple_text, test://static-text, ...).
cat >"$RUN/gateway.yaml" <<EOF
# Generated by scripts/conformance.sh
allowed_hosts: [localhost, 127.0.0.1]   # the suite checks a 403 for a foreign Host
auth:
  mode: none
virtual_hosts:
  conformance:
    backends:
      conformance:
        url: http://127.0.0.1:$BACKEND_PORT/mcp
        session: $BACKEND_SESSION
EOF
if [ "$BACKEND_MODE" = skills-multi ]; then
  # A second skills server, another tree, under the key "one": the
  # suite then sees skill://one/... and skill://conformance/... URIs.
  BACKEND2_PORT=$(free_port)
  start backend2 "$BACKEND_BIN" -fixture one -http "127.0.0.1:$BACKEND2_PORT"
  wait_for backend2 "$LAST_PID" port_open "$BACKEND2_PORT"
  printf '      one:\n        url: http://127.0.0.1:%s/mcp\n        session: %s\n' "$BACKEND2_PORT" "$BACKEND_SESSION" >>"$RUN/gateway.yaml"
fi
if [[ $BACKEND_MODE == tasks-tools* ]]; then
  # The gateway runs the tools' tasks: the backend's tasks: block.
  "$BACKEND_BIN" -print-config | sed 's/^/        /' >>"$RUN/gateway.yaml"
fi

if [ "${DIRECT:-}" = 1 ]; then
  # Baseline: no gateways, no proxy; the backend serves every path.
  URL=http://127.0.0.1:$BACKEND_PORT/mcp
  SETUP="requirements $REQUIREMENTS; DIRECT=1: the $BACKEND_MODE backend alone, no gateway"
else
  GATEWAYS=()
  for i in $(seq "$GATEWAY_INSTANCES"); do
    start "gateway$i" "$GATEWAY_BIN" --config "$RUN/gateway.yaml" --listen 127.0.0.1:0 \
      --redis-url "redis://127.0.0.1:$REDIS_PORT" --log-level "$GATEWAY_LOG_LEVEL"
    wait_for "gateway$i" "$LAST_PID" log_has "gateway$i" "mcpgw: listening on http://"
    GATEWAYS+=("$(listen_url "gateway$i")")
    log "gateway #$i on ${GATEWAYS[-1]}"
  done

  targets=()
  for g in "${GATEWAYS[@]}"; do targets+=(--target "$g"); done
  start rrproxy "$RRPROXY_BIN" --listen 127.0.0.1:0 "${targets[@]}"
  wait_for rrproxy "$LAST_PID" log_has rrproxy "rrproxy: listening on http://"
  # A loopback URL: the DNS-rebinding scenario only applies to localhost servers.
  URL=$(listen_url rrproxy)/servers/conformance/mcp
  SETUP="requirements $REQUIREMENTS; $GATEWAY_INSTANCES gateway instances ($GATEWAY_FROM) behind round-robin; backend $BACKEND_MODE, session: $BACKEND_SESSION"
fi
log "testing $URL"
log "started in $((SECONDS - T0))s; logs in $RUN"

# ---------------------------------------------------------------------------
# 4. The suite. It prints each check and a summary, writes
#    <results>/server-<scenario>-<time>/checks.json, and exits 1 on a failure.
# ---------------------------------------------------------------------------
args=(server --url "$URL" --output-dir "$RUN/results")
T1=$SECONDS
suite_rc=0
if [ -n "$SCENARIO" ]; then
  # Each named scenario, one suite run each; a glob expands against the
  # suite's own list of server scenarios.
  scenarios=()
  read -ra words <<<"$SCENARIO" # no pathname expansion of a glob
  for s in "${words[@]}"; do
    if [[ $s == *[*?]* ]]; then
      mapfile -t -O "${#scenarios[@]}" scenarios < <(conformance list --server | sed -n 's/^ *- \([^ ]*\).*/\1/p' | while read -r n; do [[ $n == $s ]] && echo "$n"; done)
    else
      scenarios+=("$s")
    fi
  done
  [ "${#scenarios[@]}" -gt 0 ] || die "SCENARIO='$SCENARIO' names no scenario of the suite"
  : >"$RUN/suite.log"
  for s in "${scenarios[@]}"; do
    log "running: conformance ${args[*]} --scenario $s"
    echo "=== Running scenario: $s ===" >>"$RUN/suite.log"
    set +e
    timeout --foreground "$SUITE_TIMEOUT" conformance "${args[@]}" --scenario "$s" 2>&1 | tee -a "$RUN/suite.log"
    rc=${PIPESTATUS[0]}
    set -e
    [ "$rc" = 0 ] || suite_rc=$rc
  done
else
  args+=(--requirements "$REQUIREMENTS")
  log "running: conformance ${args[*]}"
  set +e
  timeout --foreground "$SUITE_TIMEOUT" conformance "${args[@]}" 2>&1 | tee "$RUN/suite.log"
  suite_rc=${PIPESTATUS[0]}
  set -e
fi
SUITE_SECS=$((SECONDS - T1))
[ "$suite_rc" = 124 ] && log "the suite timed out after ${SUITE_TIMEOUT}s"

# ---------------------------------------------------------------------------
# 5. Summary: one line per scenario, and every failed check with its message.
# ---------------------------------------------------------------------------
summary_rc=0
"$NODE" - "$RUN/results" "$RUN/suite.log" >"$RUN/summary.txt" <<'JS' || summary_rc=$?
const fs = require('fs'), path = require('path');
const [resultsDir, logFile] = process.argv.slice(2);
const log = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').replace(/\x1b\[[0-9;]*m/g, '') : '';
// Scenarios in the order the suite ran them, then their checks.json.
const order = [...log.matchAll(/^(?:=== Running scenario: (\S+) ===|Running client scenario '([^']+)')/gm)]
  .map(m => m[1] || m[2]).filter((s, i, a) => a.indexOf(s) === i);
const results = {};
for (const d of fs.existsSync(resultsDir) ? fs.readdirSync(resultsDir) : []) {
  const m = d.match(/^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/);
  const f = path.join(resultsDir, d, 'checks.json');
  if (m && fs.existsSync(f)) results[m[1]] = JSON.parse(fs.readFileSync(f, 'utf8'));
}
for (const s of Object.keys(results)) if (!order.includes(s)) order.push(s);
// Scenarios the requirement set runs but does not score (extensions,
// pending SEPs): reported, never a failure of the run.
const notScored = new Map();
const ns = log.split(/^Not scored for [^:]+:.*$/m)[1] || '';
for (const m of ns.matchAll(/^\s+[✓✗] (\S+) \(([^)]+)\)/gm)) notScored.set(m[1], m[2]);
// Known failures of this combination (see KNOWN_FAILURES above).
const known = new Map((process.env.KNOWN_FAILURES || '').split('\n').filter(Boolean)
  .map(l => { const i = l.indexOf('='); return [l.slice(0, i), l.slice(i + 1)]; }));
let knownFailed = 0;
let failedScenarios = 0, naScenarios = 0;
const out = [], unscored = [];
for (const s of order) {
  if (notScored.has(s)) {
    const checks = results[s] || [];
    const failed = checks.filter(c => c.status === 'FAILURE').length;
    unscored.push(`${failed ? 'fail' : 'pass'}  ${s} (not scored: ${notScored.get(s)})`);
    continue;
  }
  const checks = results[s];
  if (!checks) { // the scenario threw before producing checks
    const m = log.match(new RegExp(`Failed to run scenario ${s}:(.*)`));
    out.push(`FAIL  ${s}: did not complete:${m ? m[1] : ' no checks.json (see suite.log)'}`);
    failedScenarios++;
    continue;
  }
  const isKnown = c => known.has(`${s}/${c.id}`);
  for (const c of checks) {
    if (!isKnown(c)) continue;
    if (c.status === 'FAILURE') { c.status = 'KNOWN'; knownFailed++; }
    else out.push(`        (known failure ${s}/${c.id} passed: take it off KNOWN_FAILURES)`);
  }
  const n = st => checks.filter(c => c.status === st).length;
  const passed = n('SUCCESS'), failed = n('FAILURE'), warned = n('WARNING'), knownN = n('KNOWN');
  if (failed) failedScenarios++;
  // N/A: the scenario ran but decided none of its checks applied.
  const label = failed ? 'FAIL' : passed ? 'PASS' : 'N/A ';
  if (!failed && !passed) naScenarios++;
  out.push(`${label}  ${s}: ${passed} passed, ${failed} failed` + (warned ? `, ${warned} warnings` : '') +
    (knownN ? `, ${knownN} known` : ''));
  const one = t => String(t || '').replace(/\s+/g, ' ');
  for (const c of checks) {
    if (c.status === 'KNOWN') out.push(`        known   ${c.id}: ${one(c.errorMessage)}; by design: ${known.get(`${s}/${c.id}`)}`);
    if (c.status === 'FAILURE') out.push(`        failed  ${c.id}: ${one(c.errorMessage || c.description)}`);
    else if (c.status === 'WARNING') out.push(`        warning ${c.id}: ${one(c.errorMessage || c.description)}`);
    // INFO checks with a message say why a part of the scenario was skipped.
    else if (c.status === 'INFO' && c.details && c.details.message) out.push(`        note    ${c.id}: ${one(c.details.message)}`);
  }
}
const scored = order.length - notScored.size;
if (unscored.length) out.push('', ...unscored);
out.push('', `${scored} scored scenarios: ${scored - failedScenarios - naScenarios} passed, ` +
  `${naScenarios} not applicable, ${failedScenarios} failed` + (knownFailed ? ` (${knownFailed} known failing checks, by design)` : ''));
// The plain closing line CI tools read: scenarios passed, failed, and N/A as skipped.
out.push(`conformance: ${scored - failedScenarios - naScenarios} passed, ${failedScenarios} failed, ${naScenarios} skipped`);
console.log(out.join('\n'));
// Exit 3: passed, but only thanks to known failures (the suite itself
// exits 1 then).
process.exit(failedScenarios || scored === 0 ? 1 : knownFailed ? 3 : 0);
JS
echo
echo "=== conformance summary: $SETUP ==="
echo "suite: ${SUITE_SECS}s, total: $((SECONDS - T0))s; logs and checks.json in $RUN"
cat "$RUN/summary.txt"

# The suite exits 1 on any failed check, known ones included: a run whose
# only failures are known (summary 3) passes.
if [ "$summary_rc" = 3 ] && [ "$suite_rc" = 1 ]; then exit 0; fi
if [ "$suite_rc" != 0 ] || [ "$summary_rc" != 0 ]; then exit 1; fi
