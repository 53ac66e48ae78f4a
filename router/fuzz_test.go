package router

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// Fuzz targets for the decoders that face attackers: a client hands the
// gateway cursors, request states and Mcp-Param-* headers of its own
// making. None may panic; none may accept what the gateway did not issue.
// Run one with `go test -run '^$' -fuzz '^FuzzCursor$' ./router/`
// (make fuzz runs each for a few seconds); the seed corpora are in
// testdata/fuzz.

var fuzzKey = []byte("0123456789abcdef0123456789abcdef")

func FuzzCursor(f *testing.F) {
	want := &cursorState{Op: "tools/list", VHost: "demo", Principal: principalTag("alice"),
		Backends: map[string]backendCursor{"one": {Cursor: "c2"}, "two": {Done: true}}}
	valid, err := encodeCursor(fuzzKey, want)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add("")
	f.Add("not a cursor")
	f.Add(valid[:len(valid)/2])
	f.Fuzz(func(t *testing.T, token string) {
		st, err := decodeCursor(fuzzKey, token)
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
	r := New(nil, Options{CursorSecret: fuzzKey})
	ctx := f.Context()
	valid, err := r.sealEnvelope(ctx, "demo", "alice", "tools/call", "one-greet",
		requestStateEnvelope{Backend: "one", State: "backend-state"})
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
		env, err := r.openEnvelope(ctx, "demo", "alice", "tools/call", "one-greet", token)
		if err != nil {
			return
		}
		if env.Backend != "one" || env.State != "backend-state" || env.Park != "" {
			t.Fatalf("a request state the gateway did not issue opened: %q -> %+v", token, env)
		}
	})
}

func FuzzParamHeaders(f *testing.F) {
	schema := json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},
		"n":{"type":"integer","x-mcp-header":"N"},"opts":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}}}}`)
	bindings := paramBindings(schema)
	if len(bindings) != 3 {
		f.Fatalf("bindings of the fuzz schema: %+v", bindings)
	}
	f.Add(`{"region":"eu","n":3,"opts":{"flag":true}}`, "eu", "3", "true")
	f.Add(`{"region":"日本"}`, "=?base64?5pel5pys?=", "", "")
	f.Add(`{"region":null}`, "", "", "")
	f.Add(`{"n":1e400}`, "", "1e400", "")
	f.Add(`{"opts":"x"}`, "", "", "=?base64?!!?=")
	f.Fuzz(func(t *testing.T, args, region, n, flag string) {
		var a map[string]json.RawMessage
		if json.Unmarshal([]byte(args), &a) != nil {
			return
		}
		h := http.Header{}
		for name, v := range map[string]string{"Region": region, "N": n, "Flag": flag} {
			if v != "" {
				h.Set(paramHeaderPrefix+name, v)
			}
		}
		msg := paramHeaderMismatch(h, bindings, a)
		if msg != "" && !strings.HasPrefix(msg, "header mismatch: ") {
			t.Fatalf("an unexpected refusal: %q", msg)
		}
	})
}
