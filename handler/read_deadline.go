package handler

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// A client that trickles its body (a byte every two seconds) holds a
// connection and a goroutine for as long as it likes unless something
// bounds the whole read; a per-read idle timeout would not, as every read
// makes progress.
//
// The bound is per request and lasts only while the body is read:
// limitBodyRead sets a read deadline through http.ResponseController when
// a request has a body, and lifts it the moment the body has been read to
// its end, before the handler runs the call. A request without a body (a
// GET) never gets one. A deadline left on the connection would be fatal
// to streams: net/http's background read, which watches for the client
// going away while the handler runs, would hit it and cancel the
// request's context, ending GET streams and calls answered as streams.
// (net/http 1.26 also clears the deadline when it starts that read, so
// http.Server.ReadTimeout happens to be safe there too; lifting it here
// keeps the guarantee explicit, ours, and tested, rather than resting on
// an undocumented detail.) A body read that runs past the deadline fails
// with os.ErrDeadlineExceeded, which servePOST answers with 408
// (bodyReadTimedOut). The header read and idle keep-alive connections are
// the server's job (http.Server.ReadHeaderTimeout and IdleTimeout, set by
// cmd/gateway).
//
// On Lambda the adapters' writers have no connection to set a deadline
// on: ResponseController answers http.ErrNotSupported and the request goes
// on unbounded here; the platform bounds it.

// limitBodyRead bounds reading each request's body to d from the moment
// the handler chain starts; d <= 0 leaves bodies unbounded.
func limitBodyRead(d time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if d <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body == nil || r.Body == http.NoBody {
				next.ServeHTTP(w, r)
				return
			}
			rc := http.NewResponseController(w)
			if err := rc.SetReadDeadline(time.Now().Add(d)); err != nil {
				next.ServeHTTP(w, r) // http.ErrNotSupported: Lambda
				return
			}
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
			next.ServeHTTP(w, r)
		})
	}
}

// deadlineBody lifts the connection's read deadline when the body ends.
// If the handler never reads to the end (an early 4xx), the deadline
// stays: it then bounds net/http's discarding of the rest, and a client
// still trickling loses the connection instead of keeping it.
type deadlineBody struct {
	io.ReadCloser
	rc     *http.ResponseController
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// bodyReadTimedOut reports whether reading the body failed because the
// read deadline passed.
func bodyReadTimedOut(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
