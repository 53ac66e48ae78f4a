package handler

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// writeResponse writes a result as it is, between the message's head and
// end: the body is EncodeResponseAs's bytes, as JSON or one SSE event,
// for small and large results, errors, and ids as the client wrote them.
func TestWriteResponse_BytesOfEncodeResponseAs(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(3))
	large := json.RawMessage(`{"tools":[` + strings.Repeat(`{"name":"a","description":"`+strings.Repeat("x", 700)+`"},`, 40) + `{"name":"z"}]}`)
	for _, resp := range []*jsonrpc.Response{
		{ID: id, Result: json.RawMessage(`{"tools":[]}`)},
		{ID: id, Result: large},
		{ID: id, Error: &jsonrpc.Error{Code: -32602, Message: "bad"}},
		{ID: id},
	} {
		for _, rawID := range []string{"", `"\u0033"`} {
			want, err := wire.EncodeResponseAs(resp, json.RawMessage(rawID))
			if err != nil {
				t.Fatal(err)
			}
			for _, jsonOK := range []bool{true, false} {
				rec := httptest.NewRecorder()
				(&server{}).writeResponse(rec, resp, json.RawMessage(rawID), jsonOK)
				w, ct := string(want), "application/json"
				if !jsonOK {
					w, ct = "event: message\ndata: "+w+"\n\n", "text/event-stream"
				}
				if got := rec.Body.String(); got != w {
					t.Fatalf("result of %d bytes, id %q, json %v:\n got  %.120q…\n want %.120q…", len(resp.Result), rawID, jsonOK, got, w)
				}
				if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != ct {
					t.Fatalf("status %d, Content-Type %q", rec.Code, rec.Header().Get("Content-Type"))
				}
			}
		}
	}
}

// BenchmarkWriteResponse writes a 1,000-tool list page (770 kB) as JSON
// and as an SSE event: what it allocates is what the handler copies.
func BenchmarkWriteResponse(b *testing.B) {
	item := `{"name":"b1-search_issues","title":"search issues","description":"Use this tool to search issues in the workspace the user is signed in to. Results are paginated.","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"Free text matched against the issues' title"}},"required":["query"]},"annotations":{"readOnlyHint":true}}`
	id, _ := jsonrpc.MakeID(float64(1))
	resp := &jsonrpc.Response{ID: id, Result: json.RawMessage(`{"tools":[` + strings.Repeat(item+",", 999) + item + `]}`)}
	for _, jsonOK := range []bool{true, false} {
		name := "sse"
		if jsonOK {
			name = "json"
		}
		b.Run(name, func(b *testing.B) {
			w := &discardWriter{h: http.Header{}}
			s := &server{}
			b.SetBytes(int64(len(resp.Result)))
			b.ReportAllocs()
			for b.Loop() {
				s.writeResponse(w, resp, json.RawMessage("1"), jsonOK)
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
