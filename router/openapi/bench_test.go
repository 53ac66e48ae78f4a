package openapi

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// Start-up and tools/list costs of the largest description we serve,
// GitHub's (13 MB, 1,223 operations), each beside a baseline in the same
// run: decoding the document with encoding/json (what any reader of it
// pays), and kin-openapi's own load (the parse and reference resolution
// the compile step comes after).
//
//	go test -run '^$' -bench GitHub -benchtime 3x ./router/openapi/

func BenchmarkGitHubDecodeBaseline(b *testing.B) {
	data, err := os.ReadFile(npmFixture(b, "@octokit/openapi/generated/api.github.com.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGitHubKinLoad(b *testing.B) {
	data, err := os.ReadFile(npmFixture(b, "@octokit/openapi/generated/api.github.com.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := openapi3.NewLoader().LoadFromData(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGitHubLoad(b *testing.B) {
	p := npmFixture(b, "@octokit/openapi/generated/api.github.com.json")
	for b.Loop() {
		if _, err := Load(context.Background(), Options{Spec: p}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGitHubListPage is one tools/list page of 100 tools, against
// encoding the same tools' definitions from scratch (the baseline).
func BenchmarkGitHubListPage(b *testing.B) {
	a := load(b, npmFixture(b, "@octokit/openapi/generated/api.github.com.json"), Options{})
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			p, _ := a.ListPage("")
			if _, err := json.Marshal(map[string]any{"tools": p.Tools}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline-reencode", func(b *testing.B) {
		p, _ := a.ListPage("")
		defs := make([]any, len(p.Tools))
		for i, raw := range p.Tools {
			_ = json.Unmarshal(raw, &defs[i])
		}
		for b.Loop() {
			if _, err := json.Marshal(map[string]any{"tools": defs}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
