package main

import "net/http"

// withFlush gives the Function URL adapter's response writer the
// http.Flusher that the gateway's SSE writer flushes every event through.
//
// lambdaurl writes the body straight into a pipe that the runtime streams
// to Lambda (a chunked request to the Runtime API, flushed chunk by chunk),
// so a Write is already on its way and Flush has nothing left to do. But
// lambdaurl's writer has no Flush method, so http.ResponseController.Flush
// reports http.ErrNotSupported, which the SSE writer takes for a broken
// stream: GET streams would end right after their priming event and a
// backend's sampling, elicitation or roots request would find the client
// "gone". The buffered adapters are left without Flush on purpose: there
// the stream cannot reach the client before the call ends, and an early
// failure is the honest answer.
func withFlush(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(flushWriter{w}, r)
	})
}

type flushWriter struct{ http.ResponseWriter }

// Flush is a no-op: every Write has reached the pipe already.
func (flushWriter) Flush() {}

// Unwrap lets http.ResponseController reach the adapter's writer for
// anything else.
func (w flushWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
