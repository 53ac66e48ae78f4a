package router

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/mcpgw/gateway/router/upstream"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A backend session the gateway keeps for a client session (`session:
// auto` or `reuse`) has one standalone stream: a backend answers a second
// GET on the session while the first is open with 409 (the go-sdk does).
// The session's listeners are rebuilt make-before-break (a subscribe, a
// log level, a reload: handler/session), so the new generation's listener
// wants that stream while the old one still holds it. Opened anew, its GET
// was refused until the old one had drained and stopped, and a backoff
// later it came up: what the backend sent in between was lost. On one
// instance the generations share the stream instead: the first listener's
// GET stays open as long as any listener of the session wants it, and each
// notification goes to the newest listener, so a rebuild is up at once and
// nothing falls between two GETs.

// Between instances no stream is shared: the listener of an instance that
// takes a session's GET over is refused (409) until the old holder lets go,
// which it does once told, some 2 s (handler/session: listenerDrain) after
// the new listener reported itself up. It does so at the first
// refusal, so the takeover goes on, and tries again every
// keptStreamRetry, rather than leaving it to the runtime's backoff (half a
// second, then doubling), which left the session unheard for seconds. What
// the backend sends between the old GET's end and the new one's start (a
// retry interval at most) is still lost: a backend without an event store
// keeps nothing for a session with no stream.

// keptStreamRetry is how soon a listener refused its backend session's
// stream asks again, and keptStreamTries how many times it asks before it
// gives up to the runtime's backoff: longer than a takeover takes to stop
// the old holder (handler/session: takeoverWait, 5 s, at most).
const (
	keptStreamRetry = 100 * time.Millisecond
	keptStreamTries = 100
)

// keptStreams are this instance's open standalone streams of kept backend
// sessions; the zero value is ready to use.
type keptStreams struct {
	mu sync.Mutex
	m  map[keptStreamKey]*keptStream
}

// keptStreamKey names one backend session's stream as one client session
// listens to it: listeners of two client sessions never share one.
type keptStreamKey struct {
	vhost, backend string
	session        store.SessionID
	id             store.BackendSessionID
}

// keptStream is one open GET and the listeners it serves.
type keptStream struct {
	cancel  context.CancelFunc
	up      chan struct{} // closed once the backend accepted the GET
	refused chan struct{} // closed once the backend refused it (409): held elsewhere
	done    chan struct{} // closed when the GET has ended; err says why
	err     error

	mu   sync.Mutex
	subs []*keptListener // newest last: it hears what the backend sends
}

// keptListener is one listener's part in a shared stream.
type keptListener struct {
	notice func(*jsonrpc.Request)
	// mu is held while the listener is handed a notification; gone, set
	// by leave under it, means it is handed nothing more: once leave has
	// returned, no notification is being handed to it, nor will be.
	mu   sync.Mutex
	gone bool
}

// hand passes n to the listener, unless it has left.
func (l *keptListener) hand(n *jsonrpc.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.gone {
		l.notice(n)
	}
}

// stop waits for a notification being handed to the listener, and hands
// it nothing more.
func (l *keptListener) stop() {
	l.mu.Lock()
	l.gone = true
	l.mu.Unlock()
}

// listenKept passes notice what the backend sends on the stream of kept
// backend session k until ctx ends or the stream ends, sharing the stream
// with the session's other listeners on this instance (open connects to
// the backend session when none is open). It calls up once the stream is
// receiving, or once the backend refused it because another instance holds
// it (a takeover: see keptStreamRetry), and returns why it stopped: ctx's
// error, or the stream's.
func (ks *keptStreams) listenKept(ctx context.Context, k keptStreamKey, open func(context.Context) (*upstream.Conn, error), notice func(*jsonrpc.Request), up func()) error {
	s, l := ks.join(ctx, k, open, notice)
	defer ks.leave(k, s, l)
	select {
	case <-s.up:
		up()
	case <-s.refused:
		up()
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// join adds a listener to k's stream, opening the stream if none is open.
func (ks *keptStreams) join(ctx context.Context, k keptStreamKey, open func(context.Context) (*upstream.Conn, error), notice func(*jsonrpc.Request)) (*keptStream, *keptListener) {
	l := &keptListener{notice: notice}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	s := ks.m[k]
	if s != nil {
		select {
		case <-s.done:
			s = nil // ended: its listeners are on their way out
		default:
		}
	}
	if s == nil {
		// The stream belongs to no one listener: it lives until the last
		// one leaves, with the first one's values (its caller).
		sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		s = &keptStream{cancel: cancel, up: make(chan struct{}), refused: make(chan struct{}), done: make(chan struct{})}
		if ks.m == nil {
			ks.m = map[keptStreamKey]*keptStream{}
		}
		ks.m[k] = s
		go s.run(sctx, open)
	}
	s.mu.Lock()
	s.subs = append(s.subs, l)
	s.mu.Unlock()
	return s, l
}

// leave removes a listener from its stream; the last one to leave ends the
// stream and waits for it, so no stream outlives its listeners.
func (ks *keptStreams) leave(k keptStreamKey, s *keptStream, l *keptListener) {
	ks.mu.Lock()
	s.mu.Lock()
	s.subs = slices.DeleteFunc(s.subs, func(x *keptListener) bool { return x == l })
	last := len(s.subs) == 0
	s.mu.Unlock()
	if last && ks.m[k] == s {
		delete(ks.m, k) // a listener that comes next opens a stream of its own
	}
	ks.mu.Unlock()
	l.stop() // a notification being handed to l is through
	if last {
		s.cancel()
		<-s.done
	}
}

// run holds the stream open until it ends or is cancelled, asking again
// while another instance holds it.
func (s *keptStream) run(ctx context.Context, open func(context.Context) (*upstream.Conn, error)) {
	defer close(s.done)
	refused := sync.OnceFunc(func() { close(s.refused) })
	for try := 1; ; try++ {
		s.err = s.listen(ctx, open)
		if !heldElsewhere(s.err) || try == keptStreamTries {
			return
		}
		refused()
		t := time.NewTimer(keptStreamRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listen is one GET on the stream, until it ends.
func (s *keptStream) listen(ctx context.Context, open func(context.Context) (*upstream.Conn, error)) error {
	conn, err := open(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(true) // the session is the client's: kept
	return conn.Listen(ctx, s.deliver, sync.OnceFunc(func() { close(s.up) }))
}

// heldElsewhere reports a backend's refusal of a session's stream because
// another GET holds it.
func heldElsewhere(err error) bool {
	var ue *upstream.Error
	return errors.As(err, &ue) && ue.Status == http.StatusConflict
}

// deliver hands a notification to the newest listener.
func (s *keptStream) deliver(n *jsonrpc.Request) {
	s.mu.Lock()
	var to *keptListener
	if len(s.subs) > 0 {
		to = s.subs[len(s.subs)-1]
	}
	s.mu.Unlock()
	if to != nil {
		to.hand(n)
	}
}
