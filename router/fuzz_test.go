package router

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// The fuzz target for the Mcp-Param-* header check: a client writes the
// headers of its own making; none may panic the check, and a refusal
// says what disagrees. (Cursors and request states: router/sealed.)
// Run it with `go test -run '^$' -fuzz '^FuzzParamHeaders$' ./router/`
// (make fuzz runs each for a few seconds); the seed corpora are in
// testdata/fuzz.

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
