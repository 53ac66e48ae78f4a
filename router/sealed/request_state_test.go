package sealed

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

// The request-state envelope's tamper cases as unit tests: only the
// envelope the gateway sealed, for this caller and this request, within
// its lifetime, opens; anything else is ErrBadRequestState, never another
// envelope's contents.
func TestRequestState_OnlyTheSealedEnvelopeOpens(t *testing.T) {
	r := NewStates(NewKey(nil, "request-state", []byte("0123456789abcdef0123456789abcdef")), time.Hour)
	other := NewStates(NewKey(nil, "request-state", []byte("fedcba9876543210fedcba9876543210")), time.Hour)
	ctx := t.Context()
	bind := func(principal, method, target string) Binding {
		return Binding{VHost: "demo", Principal: principal, Method: method, Target: target}
	}
	seal := func(r *States, principal, method, target string) string {
		tok, err := r.Seal(ctx, bind(principal, method, target), RequestState{Backend: "one", State: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := seal(r, "alice", "tools/call", "one-greet")
	if env, err := r.Open(ctx, bind("alice", "tools/call", "one-greet"), good); err != nil || env.Backend != "one" || env.State != "s1" {
		t.Fatalf("the sealed envelope: %+v, %v", env, err)
	}
	payload, sig, _ := strings.Cut(good, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(payload)
	var env map[string]any
	_ = json.Unmarshal(raw, &env)
	env["b"] = "two" // re-encoded with another backend, the old signature kept
	forged, _ := json.Marshal(env)
	expired := func() string {
		e := RequestState{Backend: "one", State: "s1", Principal: PrincipalTag("alice"), Expires: 1,
			Request: requestDigest(bind("alice", "tools/call", "one-greet"))}
		key, _ := r.key.Sign(ctx)
		tok, _ := signState(key, e)
		return tok
	}()
	for name, c := range map[string]struct {
		principal, method, target, token string
	}{
		"signature altered":     {"alice", "tools/call", "one-greet", payload + "." + sig[:len(sig)-2] + "AA"},
		"payload altered":       {"alice", "tools/call", "one-greet", base64.RawURLEncoding.EncodeToString(forged) + "." + sig},
		"no signature":          {"alice", "tools/call", "one-greet", payload + "."},
		"no dot":                {"alice", "tools/call", "one-greet", payload + sig},
		"another caller":        {"bob", "tools/call", "one-greet", good},
		"another tool":          {"alice", "tools/call", "one-other", good},
		"another method":        {"alice", "prompts/get", "one-greet", good},
		"another gateway's key": {"alice", "tools/call", "one-greet", seal(other, "alice", "tools/call", "one-greet")},
		"expired":               {"alice", "tools/call", "one-greet", expired},
		"a cursor is no state":  {"alice", "tools/call", "one-greet", mustCursor(t)},
		"empty":                 {"alice", "tools/call", "one-greet", ""},
	} {
		t.Run(name, func(t *testing.T) {
			if env, err := r.Open(ctx, bind(c.principal, c.method, c.target), c.token); !errors.Is(err, ErrBadRequestState) {
				t.Fatalf("opened %+v, %v; want ErrBadRequestState", env, err)
			}
		})
	}
}

func mustCursor(t *testing.T) string {
	tok, err := SealCursor([]byte("0123456789abcdef0123456789abcdef"), &Cursor{Op: "tools/list", VHost: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
