package plugins

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/router/hook"
)

func compileOne(t *testing.T, s Spec) hook.Hook {
	t.Helper()
	hooks, err := Compile([]Spec{s})
	if err != nil {
		t.Fatal(err)
	}
	return hooks[0]
}

func toolCall(args string) *hook.Call {
	return &hook.Call{Method: "tools/call", Backend: "one", Name: "echo",
		Params: json.RawMessage(`{"name":"echo","arguments":` + args + `}`)}
}

func TestCompile_NamesEachProblemByPluginAndField(t *testing.T) {
	_, err := Compile([]Spec{
		{Type: "deny_pattern", In: "arguments", Patterns: []string{"ok", "(unclosed"}},
		{Type: "deny_pattern", In: "sideways", Patterns: []string{"x"}},
		{Type: "redact", Builtin: []string{"secrets", "phone"}},
		{Type: "redact", Limit: 5, Patterns: []string{"", "x*"}},
		{Type: "max_result_bytes"},
		{Type: "validate_arguments", Patterns: []string{"x"}},
		{Type: "shout"},
		{},
	})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{
		"plugins[0].patterns[1]: error parsing regexp",
		`plugins[1].in: unknown value "sideways"`,
		`plugins[2].builtin[1]: unknown set "phone"`,
		"plugins[3].limit: does not apply to type redact",
		"plugins[3].patterns[0]: empty pattern",
		"plugins[3].patterns[1]: the pattern matches the empty string",
		"plugins[4].limit: must be at least 1",
		"plugins[5].patterns: does not apply to type validate_arguments",
		`plugins[6].type: unknown plugin "shout"`,
		"plugins[7].type: missing",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors do not say %q:\n%v", want, err)
		}
	}
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatal("no *SpecError in the joined error")
	}
}

func TestEachString_RewritesValuesNotKeys(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"value", `{"text":"hello"}`, `{"text":"HELLO"}`},
		{"key left alone", `{"hello":"x"}`, `{"hello":"x"}`},
		{"key with space before colon", `{"hello" : "hello"}`, `{"hello" : "HELLO"}`},
		{"array and nesting", `[{"a":["hello",1,"hello"]}]`, `[{"a":["HELLO",1,"HELLO"]}]`},
		{"escapes decoded", `{"t":"he\u006clo \"q\""}`, `{"t":"HELLO \"Q\""}`},
		{"nothing to do is the same bytes", `{"n":1,"b":true}`, `{"n":1,"b":true}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := eachString([]byte(tc.in), func(s []byte) ([]byte, bool) {
				if !strings.Contains(string(s), "he") {
					return nil, false
				}
				return []byte(strings.ToUpper(string(s))), true
			})
			if string(out) != tc.want || !json.Valid(out) {
				t.Fatalf("got %s, want %s", out, tc.want)
			}
		})
	}
}

func TestDenyPattern_RefusesArgumentsOrResultsNamingThePattern(t *testing.T) {
	ctx := context.Background()
	both := compileOne(t, Spec{Type: "deny_pattern", In: "both", Patterns: []string{"never", `(?i)drop\s+table`}})
	args := compileOne(t, Spec{Type: "deny_pattern", In: "arguments", Patterns: []string{`(?i)drop\s+table`}})
	result := compileOne(t, Spec{Type: "deny_pattern", In: "result", Patterns: []string{`^secret$`}})

	err := both.Pre(ctx, toolCall(`{"q":"x; DROP  TABLE users"}`))
	var d *hook.Denial
	if !errors.As(err, &d) || d.Code != -32030 || !strings.Contains(d.Message, "plugins[0].patterns[1]") || strings.Contains(d.Message, "DROP") {
		t.Fatalf("denial %v: want -32030 naming plugins[0].patterns[1], not quoting the match", err)
	}
	if string(d.Data) != `{"plugin":"deny_pattern","rule":"plugins[0].patterns[1]"}` {
		t.Fatalf("data %s", d.Data)
	}
	// Escapes cannot hide a match; keys and the tool name are not arguments.
	if err := args.Pre(ctx, toolCall(`{"q":"drop\u0020table"}`)); err == nil {
		t.Fatal("an escaped space hid the match")
	}
	if err := args.Pre(ctx, toolCall(`{"drop table":"fine"}`)); err != nil {
		t.Fatalf("a key was judged: %v", err)
	}
	if _, err := args.Post(ctx, toolCall(`{}`), json.RawMessage(`{"content":[{"type":"text","text":"drop table"}]}`)); err != nil {
		t.Fatalf("in: arguments judged a result: %v", err)
	}
	// An anchored pattern matches a whole string value, not the document.
	res := json.RawMessage(`{"content":[{"type":"text","text":"secret"}]}`)
	if _, err := result.Post(ctx, toolCall(`{}`), res); err == nil {
		t.Fatal("anchored pattern missed a whole string value")
	}
	if _, err := result.Post(ctx, toolCall(`{}`), json.RawMessage(`{"content":[{"type":"text","text":"not secret"}]}`)); err != nil {
		t.Fatalf("anchored pattern matched inside a string: %v", err)
	}
	if err := result.Pre(ctx, toolCall(`{"q":"secret"}`)); err != nil {
		t.Fatalf("in: result judged the arguments: %v", err)
	}
}

func TestRedact_BuiltinDetectorsAndPatterns(t *testing.T) {
	r := compileOne(t, Spec{Type: "redact", Builtin: []string{"secrets", "email"}, Patterns: []string{`\bcase-\d+\b`}})
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"
	for _, tc := range []struct{ name, text, want string }{
		{"aws key id", "key AKIAIOSFODNN7EXAMPLE here", "key [REDACTED:aws_access_key] here"},
		{"aws secret", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "[REDACTED:aws_secret_key]"},
		{"github token", "ghp_" + strings.Repeat("a1B2", 9), "[REDACTED:github_token]"},
		{"github fine-grained", "github_pat_" + strings.Repeat("x", 30), "[REDACTED:github_token]"},
		{"slack token", "xoxb-123456789012-abcdefghij", "[REDACTED:slack_token]"},
		{"private key", "k: " + pem + " end", "k: [REDACTED:private_key] end"},
		{"jwt", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2lnbmF0dXJl", "Bearer [REDACTED:jwt]"},
		{"email", "mail ann.lee+x@mail.example.co.uk now", "mail [REDACTED:email] now"},
		{"own pattern", "see case-42.", "see [REDACTED:patterns[0]]."},
		{"nothing", "plain words, a@b, AKIA123", "plain words, a@b, AKIA123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": tc.text}}})
			out, err := r.Post(context.Background(), toolCall(`{}`), in)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Content []struct{ Type, Text string }
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("not JSON: %s", out)
			}
			if got.Content[0].Type != "text" || !strings.Contains(got.Content[0].Text, tc.want) {
				t.Fatalf("text %q, want it to hold %q", got.Content[0].Text, tc.want)
			}
			if tc.want != tc.text && strings.Contains(got.Content[0].Text, tc.text) {
				t.Fatalf("the secret survived: %q", got.Content[0].Text)
			}
		})
	}
}

func TestRedact_ProgressMessageOnly(t *testing.T) {
	r := compileOne(t, Spec{Type: "redact", Builtin: []string{"email"}}).(hook.ProgressHook)
	out, err := r.Progress(context.Background(), toolCall(`{}`), json.RawMessage(`{"progressToken":"a@b.example.com","progress":1,"message":"mailing bob@example.com"}`))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	_ = json.Unmarshal(out, &p)
	if p["message"] != "mailing [REDACTED:email]" || p["progressToken"] != "a@b.example.com" || p["progress"] != 1.0 {
		t.Fatalf("progress params %s", out)
	}
}

func TestMaxResultBytes_RefusesLargerResults(t *testing.T) {
	m := compileOne(t, Spec{Type: "max_result_bytes", Limit: 20})
	if _, err := m.Post(context.Background(), toolCall(`{}`), json.RawMessage(`{"content":[]}`)); err != nil {
		t.Fatalf("small result refused: %v", err)
	}
	_, err := m.Post(context.Background(), toolCall(`{}`), json.RawMessage(`{"content":[{"type":"text","text":"long"}]}`))
	var d *hook.Denial
	if !errors.As(err, &d) || d.Code != -32030 || !strings.Contains(d.Message, "plugins[0].limit") {
		t.Fatalf("large result: %v", err)
	}
}

func TestHasFold_FindsHintsInEitherCaseInLinearTime(t *testing.T) {
	for _, tc := range []struct {
		doc, hint string
		want      bool
	}{
		{"xx AKIA yy", "akia", true},
		{"xx akIa", "akia", true},
		{"xx aki", "akia", false},
		{"@", "@", true},
		{"", "@", false},
		{"-----begin rsa private key-----", "private key-----", true},
	} {
		if got := hasFold([]byte(tc.doc), tc.hint); got != tc.want {
			t.Errorf("hasFold(%q, %q) = %v", tc.doc, tc.hint, got)
		}
	}
	// Many lower-case first bytes and one upper-case one far away: each
	// byte is looked at a bounded number of times.
	doc := []byte(strings.Repeat("a", 1<<20) + "A")
	start := time.Now()
	if hasFold(doc, "akia") {
		t.Fatal("found")
	}
	if d := time.Since(start); d > 10*time.Second { // quadratic would take hours
		t.Fatalf("1 MiB took %v: not linear", d)
	}
}
