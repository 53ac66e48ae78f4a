package localserve_test

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/localserve"
	"go.uber.org/goleak"
)

// A request that would never end on its own (a stream) ends with stop,
// which then waits for Run and runs AfterStop; nothing is left running.
func TestServe_StopEndsStreamsAndWaitsForEverything(t *testing.T) {
	before := goleak.IgnoreCurrent()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inStream := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		http.NewResponseController(w).Flush()
		close(inStream)
		<-r.Context().Done()
	})
	ran, after := make(chan struct{}), false
	url, stop := localserve.Serve(context.Background(), ln, h, localserve.Options{Path: "/mcp",
		Run:       func(base context.Context) { <-base.Done(); close(ran) },
		AfterStop: func() { after = true }})
	if want := "http://" + ln.Addr().String() + "/mcp"; url != want {
		t.Fatalf("url %q, want %q", url, want)
	}
	tr := &http.Transport{}
	res, err := (&http.Client{Transport: tr}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	<-inStream
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(localserve.ShutdownTimeout / 2):
		t.Fatal("stop waited for the stream instead of ending it")
	}
	select {
	case <-ran:
	default:
		t.Fatal("stop returned before Run")
	}
	if !after {
		t.Fatal("AfterStop did not run")
	}
	stop() // idempotent
	res.Body.Close()
	tr.CloseIdleConnections()
	goleak.VerifyNone(t, before)
}

func TestDialableAddr_WildcardBecomesLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4zero, Port: 9001}, "127.0.0.1:9001"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 9001}, "127.0.0.1:9001"},
		{&net.TCPAddr{IP: net.ParseIP("10.0.0.2"), Port: 80}, "10.0.0.2:80"},
	} {
		if got := localserve.DialableAddr(tc.addr); got != tc.want {
			t.Errorf("DialableAddr(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
