package toolsearch

import (
	"slices"
	"testing"
)

func TestWords(t *testing.T) {
	for in, want := range map[string][]string{
		"get_file_contents":  {"get", "file", "contents"},
		"API-post-search":    {"api", "post", "search"},
		"listIssues":         {"list", "issues"},
		"HTMLPage2Markdown":  {"html", "page2", "markdown"},
		"kubectl_get":        {"kubectl", "get"},
		"open a PR, please!": {"open", "a", "pr", "please"},
		"":                   nil,
	} {
		if got := words(in, nil); !slices.Equal(got, want) {
			t.Errorf("words(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTermsStemAndDropStopWords(t *testing.T) {
	got := stemmer{}.terms("Creating the repositories for a user", nil)
	want := []string{"creat", "repositori", "user"}
	if !slices.Equal(got, want) {
		t.Errorf("terms = %q, want %q", got, want)
	}
	a, b := stemmer{}.terms("repository", nil), stemmer{}.terms("repositories", nil)
	if !slices.Equal(a, b) {
		t.Errorf("repository %q and repositories %q should meet", a, b)
	}
}

func TestSynonymsAddLowerWeightedTerms(t *testing.T) {
	qs := queryTerms("remove the file")
	var del, rm float64
	for _, q := range qs {
		switch q.term {
		case "delet":
			del = q.weight
		case "remov":
			rm = q.weight
		}
	}
	if rm != 1 || del != synonymWeight {
		t.Errorf("query terms %v: want remov at 1 and delet at %v", qs, synonymWeight)
	}
}

func docs() []Doc {
	return []Doc{
		{Name: "create_issue", Description: "Create a new issue in a GitHub repository", Backend: "github",
			Params: []Param{{Name: "title"}, {Name: "body"}}},
		{Name: "delete_file", Description: "Delete a file from the repository", Backend: "github"},
		{Name: "post_message", Description: "Post a message to a Slack channel", Backend: "slack"},
		{Name: "secret_admin_tool", Description: "Delete every issue at once", Backend: "admin"},
	}
}

func TestRankFindsByIntentAndHonoursVisibility(t *testing.T) {
	r := NewBM25F()
	seg := r.Index(docs())
	hits := r.Rank("open a new issue", []Part{{Seg: seg}}, 10)
	if len(hits) == 0 || hits[0].Doc != 0 {
		t.Fatalf("hits %v: want create_issue first", hits)
	}
	if hits := r.Rank("remove a file", []Part{{Seg: seg}}, 10); len(hits) == 0 || hits[0].Doc != 1 {
		t.Fatalf("hits %v: want delete_file first (a synonym)", hits)
	}
	// Tool 3 hidden: never returned, whatever the query.
	vis := NewBits(4)
	for _, i := range []int{0, 1, 2} {
		vis.Set(i)
	}
	for _, q := range []string{"secret admin tool", "delete every issue", "admin"} {
		for _, h := range r.Rank(q, []Part{{Seg: seg, Visible: vis}}, 10) {
			if h.Doc == 3 {
				t.Errorf("query %q returned the hidden tool", q)
			}
		}
	}
	if hits := r.Rank("open a new issue", []Part{{Seg: seg}}, 1); len(hits) != 1 {
		t.Errorf("limit 1: %d hits", len(hits))
	}
	for _, q := range []string{"", "the a of", "zzzz"} {
		if hits := r.Rank(q, []Part{{Seg: seg}}, 10); len(hits) != 0 {
			t.Errorf("query %q: %v, want nothing", q, hits)
		}
	}
}

func TestRankAcrossSegmentsIsStable(t *testing.T) {
	r := NewBM25F()
	a, b := r.Index(docs()[:2]), r.Index(docs()[2:])
	parts := []Part{{Seg: a}, {Seg: b}}
	first := r.Rank("post a slack message", parts, 5)
	if len(first) == 0 || first[0].Part != 1 || first[0].Doc != 0 {
		t.Fatalf("hits %v: want the slack tool first", first)
	}
	for range 5 {
		if again := r.Rank("post a slack message", parts, 5); !slices.Equal(again, first) {
			t.Fatalf("ranking changed: %v then %v", first, again)
		}
	}
}

func TestSchemaParams(t *testing.T) {
	got := SchemaParams([]byte(`{"type":"object","properties":{"owner":{"type":"string","description":"Repository owner"},
		"files":{"type":"array","items":{"type":"object","properties":{"path":{"type":"string"}}}},"flag":true}}`))
	names := map[string]string{}
	for _, p := range got {
		names[p.Name] = p.Description
	}
	if names["owner"] != "Repository owner" || len(names) != 4 {
		t.Errorf("params %v: want owner (described), files, path, flag", got)
	}
	if _, ok := names["path"]; !ok {
		t.Errorf("params %v: nested path missing", got)
	}
	if SchemaParams([]byte(`"x"`)) != nil || SchemaParams(nil) != nil {
		t.Error("a schema that is not an object has no params")
	}
}
