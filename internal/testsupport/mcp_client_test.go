package testsupport_test

import (
	"net/http"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
)

func TestParseReply_StreamAndJSON(t *testing.T) {
	sse := http.Header{"Content-Type": {"text/event-stream"}}
	stream := "id: p\ndata: \n\n: keep-alive\n\n" +
		"event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n" +
		"id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"do\"},{\"type\":\"text\",\"text\":\"ne\"}]}}\n\n"
	r := testsupport.ParseReply(t, 200, sse, []byte(stream))
	if !r.SSE || len(r.Messages) != 2 || r.Messages[0].Method != "notifications/progress" {
		t.Fatalf("messages %+v", r.Messages)
	}
	if f := r.Final(); f == nil || string(f.ID) != "3" || r.Error() != nil || r.Text() != "done" {
		t.Fatalf("final %+v, text %q", f, r.Text())
	}

	js := http.Header{"Content-Type": {"application/json"}}
	r = testsupport.ParseReply(t, 404, js, []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"session not found"}}`+"\n"))
	if r.SSE || r.Error() == nil || r.Error().Code != -32001 {
		t.Fatalf("error reply %+v", r.Final())
	}
	if r := testsupport.ParseReply(t, 202, http.Header{}, nil); r.Final() != nil || len(r.Messages) != 0 {
		t.Fatalf("202 reply has messages: %+v", r.Messages)
	}
}
