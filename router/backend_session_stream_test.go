package router_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// streamWait bounds each wait of these tests.
const streamWait = 10 * time.Second

// listening is one ListenBackend call running on its own goroutine.
type listening struct {
	up   chan struct{}
	done chan struct{} // closed when ListenBackend returned; err says what
	err  error
	got  chan *jsonrpc.Request
	stop context.CancelFunc
}

// listenOn starts a listener of session sid's backend key on r.
func listenOn(t *testing.T, f *fixture, r *router.Router, sid store.SessionID, key string) *listening {
	t.Helper()
	sess := f.Instance.Load(t, sid)
	ctx, stop := context.WithCancel(t.Context())
	l := &listening{up: make(chan struct{}), done: make(chan struct{}), got: make(chan *jsonrpc.Request, 16), stop: stop}
	up := sync.OnceFunc(func() { close(l.up) })
	go func() {
		defer close(l.done)
		l.err = r.ListenBackend(ctx, sess, http.Header{}, router.ListenTarget{Key: key}, emitTo(l.got), up)
	}()
	return l
}

// A kept backend session has one standalone stream, and another
// instance's listener may hold it (a takeover of the client's GET between
// instances): the backend answers the new listener's GET 409 until the
// old one lets go. The new listener reports itself up at once (the
// takeover goes on, and the old holder is told to stop) and keeps asking
// for the stream rather than giving up: once the old one has let go, what
// the backend sends reaches the new one.
func TestListenKept_StreamHeldByAnotherInstanceIsTakenOnceFree(t *testing.T) {
	reuse := func(b *router.Backend) { b.Session = router.SessionReuse }
	f := newFixture(t, backendSpec{Key: "r", Opts: testsupport.BackendOptions{StreamingTools: true}, Adjust: reuse}, backendSpec{Key: "p"})
	other := f.NewInstance(routertest.Options{})
	sid, _ := f.Initialize(nil)
	result(t, f.Call(sid, "resources/subscribe", map[string]any{"uri": "r-test://counter"}))
	b := f.Backends["r"]

	old := listenOn(t, f, f.Router, sid, "r")
	defer func() { old.stop(); <-old.done }()
	waitOrFail(t, old, "the first listener")
	if !b.WaitCount(testsupport.StreamAccepted, 1, streamWait) {
		t.Fatal("the backend attached no stream")
	}
	taker := listenOn(t, f, other.Router, sid, "r")
	defer func() { taker.stop(); <-taker.done }()
	waitOrFail(t, taker, "the second listener")
	if b.Count(testsupport.StreamRefused) < 1 {
		t.Fatal("the backend did not refuse the second stream: nothing tested")
	}

	old.stop()
	<-old.done
	if !b.WaitCount(testsupport.StreamAccepted, 2, streamWait) {
		t.Fatalf("the second listener never got the stream (%d refusals)", b.Count(testsupport.StreamRefused))
	}
	result(t, f.Call(sid, "tools/call", map[string]any{"name": "r-increment"}))
	for {
		select {
		case n := <-taker.got:
			if n.Method == "notifications/resources/updated" {
				return
			}
		case <-taker.done:
			t.Fatalf("the second listener stopped: %v", taker.err)
		case <-time.After(streamWait):
			t.Fatal("the update did not reach the second listener")
		}
	}
}

// waitOrFail waits for a listener to report itself up, failing the test
// if it returns first or takes longer than streamWait.
func waitOrFail(t *testing.T, l *listening, who string) {
	t.Helper()
	select {
	case <-l.up:
	case <-l.done:
		t.Fatalf("%s gave up: %v", who, l.err)
	case <-time.After(streamWait):
		t.Fatalf("%s did not come up", who)
	}
}

// emitTo is a listener's emit that never blocks it: a test reads what it
// needs of the channel and leaves the rest.
func emitTo(ch chan<- *jsonrpc.Request) func(*jsonrpc.Request) {
	return func(n *jsonrpc.Request) {
		select {
		case ch <- n:
		default:
		}
	}
}
