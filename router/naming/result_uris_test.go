package naming

import (
	"encoding/json"
	"testing"
)

// A backend's results name its own resources: each is published by the
// renaming rule, and a result with nothing to publish keeps its bytes.
func TestNaming_ResultURIsArePublished(t *testing.T) {
	for _, c := range []struct {
		name, method, in, want string
	}{
		{"resource link", "tools/call",
			`{"content":[{"type":"text","text":"see"},{"type":"resource_link","uri":"test://a","name":"a"}]}`,
			`{"content":[{"text":"see","type":"text"},{"name":"a","type":"resource_link","uri":"one-test://a"}]}`},
		{"embedded resource", "tools/call",
			`{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"hi"}}],"isError":false}`,
			`{"content":[{"resource":{"text":"hi","uri":"one-file:///x"},"type":"resource"}],"isError":false}`},
		{"an app tool's result", "tools/call",
			`{"content":[],"_meta":{"ui":{"resourceUri":"ui://clock/app.html"},"ui/resourceUri":"ui://clock/app.html","openai/outputTemplate":"ui://widget/w.html"}}`,
			`{"_meta":{"openai/outputTemplate":"ui://one/widget/w.html","ui":{"resourceUri":"ui://one/clock/app.html"},"ui/resourceUri":"ui://one/clock/app.html"},"content":[]}`},
		{"prompt messages", "prompts/get",
			`{"messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"test://p","text":"t"}}},{"role":"user","content":{"type":"text","text":"uri"}}]}`,
			`{"messages":[{"content":{"resource":{"text":"t","uri":"one-test://p"},"type":"resource"},"role":"user"},{"content":{"type":"text","text":"uri"},"role":"user"}]}`},
		{"read contents", "resources/read",
			`{"contents":[{"uri":"ui://clock/app.html","mimeType":"text/html;profile=mcp-app","text":"<html>"}]}`,
			`{"contents":[{"mimeType":"text/html;profile=mcp-app","text":"\u003chtml\u003e","uri":"ui://one/clock/app.html"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := PublishResultURIs("one", c.method, json.RawMessage(c.in))
			if string(got) != c.want {
				t.Fatalf("published\n%s\nwant\n%s", got, c.want)
			}
		})
	}
	// Nothing to publish: the same bytes, not re-encoded.
	plain := json.RawMessage(`{"content":[{"type":"text","text":"no links here"}],  "isError":false}`)
	if got := PublishResultURIs("one", "tools/call", plain); string(got) != string(plain) {
		t.Fatalf("a result with no URI was rewritten: %s", got)
	}
	withURIWord := json.RawMessage(`{"content":[{"type":"text","text":"x","uri":"not a block's"}]}`)
	if got := PublishResultURIs("one", "tools/call", withURIWord); string(got) != string(withURIWord) {
		t.Fatalf("a text block's stray uri was rewritten: %s", got)
	}
}
