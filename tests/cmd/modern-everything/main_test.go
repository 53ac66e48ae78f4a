package main

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// The command prints the URL it serves once ready (what
// scripts/conformance.sh waits for), refuses a GET there, and stops when
// its context ends.
func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out testsupport.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-http", "127.0.0.1:0", "-watch-interval", "0"}, &out) }()

	ready := regexp.MustCompile(`modern-everything: listening on (http://\S+/mcp) `)
	var url string
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		if m := ready.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
		return url != ""
	}) {
		t.Fatalf("no ready line in %q", out.String())
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET %s: %d, want 405", url, resp.StatusCode)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
	if !strings.Contains(out.String(), "shutting down") {
		t.Errorf("output %q has no shutdown line", out.String())
	}
}

func TestRunRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-watch-interval", "-1s"}, {"extra"}, {"-nope"}} {
		if err := run(t.Context(), args, &testsupport.SyncBuffer{}); err == nil {
			t.Errorf("run %q: no error", args)
		}
	}
}
