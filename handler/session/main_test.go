package session_test

import (
	"os"
	"testing"

	"context"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/handler/session"
	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var redisSrv *testsupport.RedisServer

func TestMain(m *testing.M) {
	redisSrv = testsupport.MustStartRedis()
	code := m.Run()
	redisSrv.Stop()
	os.Exit(code)
}

type (
	fixture  = routertest.Fixture
	instance = routertest.Instance
	options  = routertest.Options
)

const waitFor = 10 * time.Second

// streamingFixture is a virtual host over two backends with the streaming
// tools (progress, sampling, elicitation, roots, block), and an instance.
func streamingFixture(t *testing.T, opts options) *fixture {
	t.Helper()
	return routertest.New(t, redisSrv.URL(), opts,
		routertest.Spec{Key: "gateway-one", Opts: testsupport.BackendOptions{StreamingTools: true}},
		routertest.Spec{Key: "gateway-two", Opts: testsupport.BackendOptions{StreamingTools: true}})
}

// handle runs one call with a stream on instance in.
func handle(t *testing.T, in *instance, sid store.SessionID, id jsonrpc.ID, method string, params any, s interface {
	Send(jsonrpc.Message) error
}) *jsonrpc.Response {
	t.Helper()
	return in.Call(t, sid, id, nil, method, params, s)
}

// openStream attaches a GET stream of session sid on instance in.
func openStream(t *testing.T, in *instance, sid store.SessionID, lastEventID store.EventID) *session.SessionEvents {
	t.Helper()
	ev, err := in.Sessions.OpenStream(context.Background(), in.Load(t, sid), http.Header{}, lastEventID)
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	return ev
}

// nextEvent waits for the next live event and decodes its notification.
func nextEvent(t *testing.T, ev *session.SessionEvents) (store.Event, *jsonrpc.Request) {
	t.Helper()
	select {
	case e, ok := <-ev.Live:
		if !ok {
			t.Fatal("live channel closed")
		}
		msg, err := jsonrpc.DecodeMessage(e.Data)
		if err != nil {
			t.Fatal(err)
		}
		return e, msg.(*jsonrpc.Request)
	case <-time.After(waitFor):
		t.Fatal("no event arrived")
	}
	return store.Event{}, nil
}

// addTool makes a go-sdk backend send notifications/tools/list_changed.
func addTool(f *fixture, backend, name string) {
	f.Backends[backend].Server.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
}

func result(t testing.TB, resp *jsonrpc.Response) map[string]any {
	t.Helper()
	return routertest.Result(t, resp)
}
func rpcErr(t testing.TB, resp *jsonrpc.Response) *jsonrpc.Error {
	t.Helper()
	return routertest.RPCErr(t, resp)
}
func names(t testing.TB, res map[string]any, field string) []string {
	t.Helper()
	return routertest.Names(t, res, field)
}
func text(t testing.TB, res map[string]any) string { t.Helper(); return routertest.Text(t, res) }
func mustID(n int) jsonrpc.ID                      { return routertest.MustID(n) }

// busSettled returns once every bus message published on in's store
// before it was called has been handed to the store's subscribers, the
// session runtime's included: the store calls them one after another, in
// order, from one goroutine, so a marker published now and seen here
// comes after every earlier message. A test that subscribes the session
// and then opens its stream calls it in between, so the subscription's
// listeners-changed message, published before any stream was held, cannot
// arrive after the stream opened and rebuild its listeners once more.
func busSettled(t *testing.T, in *instance) {
	t.Helper()
	marker := store.BusMessage{Kind: "test-settled", ID: time.Now().Format(time.RFC3339Nano)}
	seen := make(chan struct{}, 1)
	stop, err := in.Store.Subscribe(t.Context(), func(m store.BusMessage) {
		if m.Kind == marker.Kind && m.ID == marker.ID {
			select {
			case seen <- struct{}{}:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := in.Store.Publish(t.Context(), marker); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(waitFor):
		t.Fatal("the bus did not deliver the test's marker")
	}
}

// listenersUp waits until the hold's latest listeners are receiving
// (session.ListenersUp) and returns that rebuild's signal. A backend
// counts a GET before its SDK attaches the stream, so a count says less:
// a notification sent in between is lost.
func listenersUp(t *testing.T, ev *session.SessionEvents) <-chan struct{} {
	t.Helper()
	up := session.ListenersUp(ev)
	waitClosed(t, up, "the stream's listeners did not come up")
	return up
}

// listenersRebuilt waits for a rebuild of the hold's listeners after the
// one whose signal is prev (asked for over the bus, or spawned, so it is
// polled for) and for its listeners to be receiving; it returns the new
// signal.
func listenersRebuilt(t *testing.T, ev *session.SessionEvents, prev <-chan struct{}) <-chan struct{} {
	t.Helper()
	if !testsupport.Eventually(t, waitFor, func() bool { return session.ListenersUp(ev) != prev }) {
		t.Fatal("the listeners were not rebuilt")
	}
	return listenersUp(t, ev)
}

// waitClosed fails the test unless ch is closed within waitFor.
func waitClosed(t *testing.T, ch <-chan struct{}, msg string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatal(msg)
	}
}
