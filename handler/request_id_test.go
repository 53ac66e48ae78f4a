package handler_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawPost POSTs body on a session and returns the status and the JSON-RPC
// payload (the last data line of an event stream); safe off the test
// goroutine.
func (g *gw) rawPost(sid, body string) (int, string, error) {
	hr, err := http.NewRequest(http.MethodPost, g.url+"/servers/demo/mcp", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json, text/event-stream")
	hr.Header.Set("Authorization", "Bearer "+g.token("alice"))
	hr.Header.Set("Mcp-Session-Id", sid)
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	payload := string(b)
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		for _, line := range strings.Split(payload, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok && d != "" {
				payload = d
			}
		}
	}
	return res.StatusCode, strings.TrimSpace(payload), err
}

// idOf returns the id member of a JSON-RPC message as raw bytes.
func idOf(t *testing.T, payload string) string {
	t.Helper()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		t.Fatalf("not a JSON-RPC message: %s", payload)
	}
	return string(m.ID)
}

func TestRequestID_EchoedExactly(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	echo := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"x"}}}`
	}
	for _, id := range []string{
		`9007199254740991`,  // 2^53-1, the largest exact integer
		`-9007199254740991`, // the smallest
		`"\u0041<&>\/"`,     // escapes come back as the client wrote them
		`"ok"`,
	} {
		for _, accept := range []string{"application/json", "text/event-stream"} {
			t.Run(id+" "+accept, func(t *testing.T) {
				r := g.do(req{body: echo(id), session: sid, headers: map[string]string{"Accept": accept}})
				payload := r.body
				if accept == "text/event-stream" {
					_, payload, _ = strings.Cut(r.body, "data: ")
				}
				if r.status != 200 || r.rpc.Error != nil || idOf(t, payload) != id {
					t.Fatalf("status %d, answer %s: want the id %s echoed byte for byte", r.status, r.body, id)
				}
			})
		}
	}
}

func TestRequestID_NotStringOrIntegerIsInvalid(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize("alice", "demo")
	g.one.ResetCounts()
	for _, tc := range []struct{ id, says string }{
		{`null`, "not null"},
		{`1.5`, "not an integer"},
		{`1.0`, "not an integer"},
		{`1e2`, "not an integer"},
		{`9223372036854775808`, "outside ±(2^53−1)"}, // 2^63 came back as -2^63
		{`9007199254740993`, "outside ±(2^53−1)"},    // 2^53+1 came back as 2^53
		{`true`, "string or an integer"},
		{`{"a":1}`, "string or an integer"},
		{`"\ud800"`, "Unicode"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			body := `{"jsonrpc":"2.0","id":` + tc.id + `,"method":"tools/call","params":{"name":"gateway-one-echo","arguments":{"text":"x"}}}`
			r := g.do(req{body: body, session: sid})
			if r.status != http.StatusBadRequest || r.rpc.Error == nil || r.rpc.Error.Code != -32600 || !strings.Contains(r.rpc.Error.Message, tc.says) {
				t.Fatalf("status %d body %s: want 400, -32600 saying %q", r.status, r.body, tc.says)
			}
			if r.rpc.ID != nil {
				t.Fatalf("an invalid id is answered with id null, got %v", r.rpc.ID)
			}
			batch := g.do(req{body: `[` + body + `]`, session: g.initialize20250326()})
			if batch.status != http.StatusBadRequest || batch.rpc.Error == nil || batch.rpc.Error.Code != -32600 || !strings.Contains(batch.body, "batch element 0") {
				t.Fatalf("in a batch: status %d body %s", batch.status, batch.body)
			}
		})
	}
	if n := g.one.Count("tools/call"); n != 0 {
		t.Fatalf("%d calls with invalid ids reached the backend", n)
	}
}

func TestRequestID_BatchAnswersEchoIDsExactly(t *testing.T) {
	g := startGateway(t, gwOptions{})
	sid := g.initialize20250326()
	body := `[{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"},{"jsonrpc":"2.0","id":"\u00e9","method":"tools/list"}]`
	r := g.do(req{body: body, session: sid})
	var out []json.RawMessage
	if err := json.Unmarshal([]byte(r.body), &out); err != nil || len(out) != 2 {
		t.Fatalf("status %d body %s", r.status, r.body)
	}
	if a, b := idOf(t, string(out[0])), idOf(t, string(out[1])); a != `9007199254740991` || b != `"\u00e9"` {
		t.Fatalf("ids %s and %s, want 9007199254740991 and \"\\u00e9\" as sent", a, b)
	}
}

// A cancel names exactly one request: 1.5 is no id at all (it used to be
// read as 1), and 2^53 is not 2^53+1 (float64 made them one).
func TestRequestID_CancelMatchesOnlyTheExactID(t *testing.T) {
	g := startGateway(t, gwOptions{})
	for _, tc := range []struct{ callID, cancelID string }{
		{`1`, `1.5`},
		{`9007199254740991`, `9007199254740990`},
		{`7`, `"7"`},
	} {
		t.Run(tc.callID+" vs "+tc.cancelID, func(t *testing.T) {
			sid := g.initialize("alice", "demo")
			g.one.ResetCounts()
			type answer struct {
				status  int
				payload string
				err     error
			}
			done := make(chan answer, 1)
			go func() {
				// Long enough that the cancel lands while it runs.
				st, p, err := g.rawPost(sid, `{"jsonrpc":"2.0","id":`+tc.callID+`,"method":"tools/call","params":{"name":"gateway-one-progress","arguments":{"steps":5,"delayMs":300}}}`)
				done <- answer{st, p, err}
			}()
			if !g.one.WaitCount("tools/call", 1, 30*time.Second) {
				t.Fatal("the call never reached the backend")
			}
			cancel := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s}}`, tc.cancelID)
			if r := g.do(req{body: cancel, session: sid}); r.status != http.StatusAccepted {
				t.Fatalf("cancel: %d %s", r.status, r.body)
			}
			var a answer
			select {
			case a = <-done:
			case <-time.After(time.Minute):
				t.Fatal("no answer to the call")
			}
			if a.err != nil || a.status != 200 || !strings.Contains(a.payload, `"done"`) || idOf(t, a.payload) != tc.callID {
				t.Fatalf("call %s after a cancel for %s: %d %s %v; want it to finish", tc.callID, tc.cancelID, a.status, a.payload, a.err)
			}
		})
	}
}
