package handler_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// commandCalls sums the calls of every Redis command except INFO (which
// reading the stats itself costs).
func commandCalls(t *testing.T) int {
	t.Helper()
	info, err := redisSrv.Client().Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(rest, "calls="), ",")
		n, _ := strconv.Atoi(calls)
		total += n
	}
	return total
}

// A routed request costs the store one pipelined round trip of two
// commands: HGETALL and PEXPIRE of the session hash (issue #5's budget).
func TestStoreTraffic_RoutedRequestIsTwoCommands(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"x"}}}`
	g.do(req{body: call, session: sid}) // warm-up: connections, scripts

	const n = 5
	before := commandCalls(t)
	for range n {
		if r := g.do(req{body: call, session: sid}); r.status != 200 || r.rpc.Error != nil {
			t.Fatalf("call: %d %s", r.status, r.body)
		}
	}
	perRequest := float64(commandCalls(t)-before) / n
	t.Logf("store commands per routed request: %.1f", perRequest)
	if perRequest > 2 {
		t.Fatalf("%.1f store commands per routed request, budget is 2", perRequest)
	}
}

// A 2026-07-28 request has no session: once the instance knows its
// backends, a call and a list cost the store nothing at all.
func TestStoreTraffic_ModernRequestsTouchNoStore(t *testing.T) {
	g := startGateway(t, gwOptions{stateless: true})
	call := modernBody(2, "tools/call", `{"name":"gateway-one-echo","arguments":{"text":"x"}}`, okMeta)
	list := modernBody(3, "tools/list", "", okMeta)
	callHeaders := with(modernHeaders("tools/call"), "Mcp-Name", "gateway-one-echo")
	g.do(req{body: call, headers: callHeaders}) // warm-up: discovery, connections

	const n = 5
	before := commandCalls(t)
	for range n {
		if r := g.do(req{body: call, headers: callHeaders}); r.status != 200 || r.rpc.Error != nil {
			t.Fatalf("call: %d %s", r.status, r.body)
		}
		if r := g.do(req{body: list, headers: modernHeaders("tools/list")}); r.status != 200 || r.rpc.Error != nil {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
	}
	if got := commandCalls(t) - before; got != 0 {
		t.Fatalf("%d store commands for %d modern calls and lists, want 0", got, 2*n)
	}
}
