package skillserver

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestLoad_FixturesFollowTheSEP(t *testing.T) {
	one, err := Load(FixtureOne)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, s := range one.Skills() {
		paths = append(paths, s.Path)
	}
	if want := []string{"acme/billing", "acme/billing/refunds", "git-workflow"}; !slices.Equal(paths, want) {
		t.Fatalf("skills %v, want %v", paths, want)
	}
	billing := one.Skills()[0]
	var files []string
	for _, f := range billing.Files {
		files = append(files, f.URI())
	}
	// Completeness: the nested skill's files belong to the enclosing one.
	want := []string{"skill://acme/billing/SKILL.md", "skill://acme/billing/refunds/SKILL.md",
		"skill://acme/billing/refunds/examples/email.md", "skill://acme/billing/scripts/ledger.py"}
	if !slices.Equal(files, want) {
		t.Fatalf("billing files %v, want %v", files, want)
	}
	var fm map[string]any
	if err := json.Unmarshal(one.Skills()[1].Frontmatter, &fm); err != nil || fm["allowed-tools"] != "ledger_lookup" {
		t.Fatalf("refunds frontmatter %s (%v): every field the author wrote", one.Skills()[1].Frontmatter, err)
	}
	if _, ok := one.children("acme/billing"); !ok {
		t.Fatal("acme/billing is a directory")
	}
	if _, ok := one.children("acme/billing/SKILL.md"); ok {
		t.Fatal("a file is not a directory")
	}
	if _, err := Load(FixtureTwo); err != nil {
		t.Fatal(err)
	}
}
