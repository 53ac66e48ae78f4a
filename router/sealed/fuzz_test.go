package sealed

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Fuzz targets for the decoders that face attackers: a client hands the
// gateway cursors and request states of its own making. None may panic;
// none may accept what the gateway did not issue. Run one with
// `go test -run '^$' -fuzz '^FuzzCursor$' ./router/sealed/` (make fuzz runs
// each for a few seconds); the seed corpora are in testdata/fuzz.

var fuzzKey = []byte("0123456789abcdef0123456789abcdef")

func FuzzCursor(f *testing.F) {
	want := &Cursor{Op: "tools/list", VHost: "demo", Principal: PrincipalTag("alice"),
		Backends: map[string]BackendCursor{"one": {Cursor: "c2"}, "two": {Done: true}}}
	valid, err := SealCursor(fuzzKey, want)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add("")
	f.Add("not a cursor")
	f.Add(valid[:len(valid)/2])
	f.Fuzz(func(t *testing.T, token string) {
		st, err := OpenCursor(fuzzKey, token)
		if err != nil {
			return
		}
		// Only a token sealed with the key opens (the seed, made anew by
		// each fuzzing process with a nonce of its own): it holds what
		// was sealed, nothing a mutation made.
		got, _ := json.Marshal(st)
		if exp, _ := json.Marshal(want); string(got) != string(exp) {
			t.Fatalf("a cursor the gateway did not issue opened: %q -> %s", token, got)
		}
	})
}

func FuzzRequestState(f *testing.F) {
	states := NewStates(NewKey(nil, "request-state", fuzzKey), time.Hour)
	ctx := f.Context()
	b := Binding{VHost: "demo", Principal: "alice", Method: "tools/call", Target: "one-greet"}
	valid, err := states.Seal(ctx, b, RequestState{Backend: "one", State: "backend-state"})
	if err != nil {
		f.Fatal(err)
	}
	payload, sig, _ := strings.Cut(valid, ".")
	f.Add(valid)
	f.Add(payload + "." + sig + "x")
	f.Add(payload[:len(payload)-1] + "." + sig)
	f.Add("." + sig)
	f.Add(payload + ".")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, token string) {
		env, err := states.Open(ctx, b, token)
		if err != nil {
			return
		}
		if env.Backend != "one" || env.State != "backend-state" || env.Park != "" {
			t.Fatalf("a request state the gateway did not issue opened: %q -> %+v", token, env)
		}
	})
}
