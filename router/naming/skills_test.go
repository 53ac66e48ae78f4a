package naming

import (
	"strings"
	"testing"
)

func TestSkillURIs_KeepTheSchemeAndTheSkillName(t *testing.T) {
	s := NewSplitter([]string{"one", "one.b"})
	for _, tc := range []struct{ key, uri, published string }{
		{"one", "skill://acme/billing/refunds/SKILL.md", "skill://one/acme/billing/refunds/SKILL.md"},
		{"one.b", "skill://git-workflow/SKILL.md", "skill://one.b/git-workflow/SKILL.md"},
		{"one", "skill://pdf/templates", "skill://one/pdf/templates"},
		{"one", "github://o/r/skills/x/SKILL.md", "one-github://o/r/skills/x/SKILL.md"}, // other schemes: the general rule
	} {
		if got := PublishURI(tc.key, tc.uri); got != tc.published {
			t.Errorf("PublishURI(%s, %s) = %s, want %s", tc.key, tc.uri, got, tc.published)
		}
		if k, u, ok := s.SplitURI(tc.published); !ok || k != tc.key || u != tc.uri {
			t.Errorf("SplitURI(%s) = %s %s %v", tc.published, k, u, ok)
		}
	}
	for _, bad := range []string{"skill://one", "skill://one/", "skill://two/x/SKILL.md", "skill://oneacme/SKILL.md"} {
		if k, u, ok := s.SplitURI(bad); ok {
			t.Errorf("SplitURI(%s) = %s %s: not a published URI", bad, k, u)
		}
	}
}

func TestPublishSkill_RenamesURIsOnly(t *testing.T) {
	entry := `{"uri":"skill://a/b/SKILL.md","frontmatter":{"name":"b","description":"x \u003c y \u0026 <z>"},` +
		`"resources":[{"uri":"skill://a/b/SKILL.md","digest":"sha256:00","size":3},{"uri":"skill://a/b/f.md","digest":"sha256:11","size":4}]}`
	out, uri, err := PublishSkill("k", []byte(entry))
	if err != nil || uri != "skill://k/a/b/SKILL.md" {
		t.Fatalf("PublishSkill: %s %v", uri, err)
	}
	want := `{"frontmatter":{"name":"b","description":"x \u003c y \u0026 <z>"},` +
		`"resources":[{"digest":"sha256:00","size":3,"uri":"skill://k/a/b/SKILL.md"},{"digest":"sha256:11","size":4,"uri":"skill://k/a/b/f.md"}],"uri":"skill://k/a/b/SKILL.md"}`
	if string(out) != want {
		t.Fatalf("published\n%s\nwant\n%s", out, want)
	}
	dynamic := `{"uri":"skill://d/SKILL.md","frontmatter":{"name":"d","description":"d"},"resources":"dynamic"}`
	if out, _, err := PublishSkill("k", []byte(dynamic)); err != nil || !strings.Contains(string(out), `"resources":"dynamic"`) {
		t.Fatalf("a dynamic skill: %s %v", out, err)
	}
	if _, _, err := PublishSkill("k", []byte(`{"frontmatter":{}}`)); err == nil {
		t.Fatal("an entry without uri is malformed")
	}
}
