package plugins

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpgw/gateway/router/hook"
)

// BenchmarkPlugins_ToolsCall is the plugins' own work on one tools/call of
// BenchmarkHandle_ToolsCall/stateless+policy: deny_pattern on the
// arguments and redact with the built-in detectors on a result with
// nothing to redact (the common case), then on one with an e-mail address.
func BenchmarkPlugins_ToolsCall(b *testing.B) {
	hooks, err := Compile([]Spec{
		{Type: TypeDenyPattern, In: InArguments, Patterns: []string{`(?i)drop\s+table`}},
		{Type: TypeRedact, Builtin: []string{"secrets", "email"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, result string }{
		{"clean", `{"content":[{"type":"text","text":"hi there, the build passed in 42 seconds"}],"isError":false}`},
		{"redacted", `{"content":[{"type":"text","text":"hi there, write to ann@example.com"}],"isError":false}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			result := json.RawMessage(tc.result)
			b.ReportAllocs()
			for b.Loop() {
				c := &hook.Call{Method: "tools/call", Name: "echo", Params: json.RawMessage(`{"name":"echo","arguments":{"text":"hi"}}`)}
				for _, h := range hooks {
					if err := h.Pre(ctx, c); err != nil {
						b.Fatal(err)
					}
				}
				out := result
				for _, h := range hooks {
					if out, err = h.Post(ctx, c, out); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
