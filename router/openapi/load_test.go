package openapi

// A description that cannot be read is a start-up error: it must say
// which description and which backend, and never the credentials a URL
// may carry.

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad_UnreadableDescriptionNamesItAndTheBackend(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no such dir", "missing.json")
	gone := httptest.NewServer(http.NotFoundHandler())
	defer gone.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close() // nothing listens there any more: connection refused
	goneHost := strings.TrimPrefix(gone.URL, "http://")
	for name, c := range map[string]struct {
		spec        string
		says, hides []string
	}{
		"missing file": {missing, []string{missing, `backend "notes"`, "no such file"}, nil},
		"HTTP 404": {"http://alice:s3cret@" + goneHost + "/spec.json?api_key=k3y",
			[]string{"http://" + goneHost + "/spec.json", `backend "notes"`, "HTTP 404"}, []string{"s3cret", "alice", "k3y"}},
		"nothing listening": {"http://alice:s3cret@" + closed + "/spec.yaml",
			[]string{"http://" + closed + "/spec.yaml", `backend "notes"`, "refused"}, []string{"s3cret", "alice"}},
		"not a URL": {"http://alice:s3cret@[::1/spec.yaml", []string{`backend "notes"`, "not a URL"}, []string{"s3cret", "alice"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Load(context.Background(), Options{Backend: "notes", Spec: c.spec})
			if err == nil {
				t.Fatal("loaded")
			}
			msg := err.Error()
			for _, s := range c.says {
				if !strings.Contains(msg, s) {
					t.Errorf("%q does not say %q", msg, s)
				}
			}
			for _, s := range c.hides {
				if strings.Contains(msg, s) {
					t.Errorf("%q shows %q", msg, s)
				}
			}
			if strings.Count(msg, c.spec) > 1 || strings.Count(msg, goneHost) > 1 {
				t.Errorf("%q names the description twice", msg)
			}
		})
	}
}
