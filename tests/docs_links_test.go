package tests

// The manual is many markdown files that link to each other and to the
// code; a moved file or a renamed heading must not leave a reader at a
// dead link. These tests resolve every internal link, and check that the
// README's example config is the one the first-config guide builds and
// one the gateway takes.

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// docFiles are the repository's markdown files a reader browses: the
// top-level pages, docs/, examples/ and the charts' READMEs.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "CONTRIBUTING.md", "BENCHMARKS.md"}
	for _, dir := range []string{"docs", "examples", "charts"} {
		err := filepath.WalkDir(repoPath(dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".md") || (dir == "charts" && d.Name() != "README.md") {
				return nil
			}
			rel, err := filepath.Rel(repoPath(), path)
			files = append(files, filepath.ToSlash(rel))
			return err
		})
		if err != nil && !(os.IsNotExist(err) && dir == "examples") {
			t.Fatal(err)
		}
	}
	return files
}

var (
	mdLink     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	mdHeading  = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	inlineCode = regexp.MustCompile("`[^`]*`")
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// prose is md's lines with those of fenced code blocks, whose text is not
// markdown, blanked (so line numbers stay the file's).
func prose(md string) []string {
	out := strings.Split(md, "\n")
	fence := false
	for i, l := range out {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			out[i] = ""
		} else if fence {
			out[i] = ""
		}
	}
	return out
}

// slug is GitHub's anchor for a heading: lower case, inline markup and
// punctuation dropped, spaces as hyphens.
func slug(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors are the fragments a markdown file answers to.
func anchors(md string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range prose(md) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := mdHeading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[s+"-"+itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + itoa(n%10)
}

// Every relative link of every doc file names a file or directory that
// exists, and every #fragment a heading of the file it points into.
func TestDocs_InternalLinksResolve(t *testing.T) {
	files := docFiles(t)
	cache := map[string]map[string]bool{}
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := cache[rel]; ok {
			return a
		}
		a := anchors(string(mustRead(t, rel)))
		cache[rel] = a
		return a
	}
	links := 0
	for _, file := range files {
		for n, line := range prose(string(mustRead(t, file))) {
			line = inlineCode.ReplaceAllString(line, "")
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target) {
					continue // http:, https:, mailto: …
				}
				links++
				path, frag, _ := strings.Cut(target, "#")
				rel := file
				if path != "" {
					rel = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
					if _, err := os.Stat(repoPath(rel)); err != nil {
						t.Errorf("%s:%d: %s: no such file", file, n+1, target)
						continue
					}
				}
				if frag == "" || !strings.HasSuffix(rel, ".md") {
					continue
				}
				if !anchorsOf(rel)[frag] {
					t.Errorf("%s:%d: %s: %s has no heading with anchor #%s", file, n+1, target, rel, frag)
				}
			}
		}
	}
	if links < 100 {
		t.Fatalf("only %d internal links found in %d files: the scan is broken", links, len(files))
	}
}

// The slug rule is GitHub's, on the kinds of heading the docs have.
func TestDocs_SlugIsGitHubs(t *testing.T) {
	for heading, want := range map[string]string{
		"Quick start":                              "quick-start",
		"Store layout (`store/tasks.go`)":          "store-layout-storetasksgo",
		"Tool search: ranking and cost (issue 42)": "tool-search-ranking-and-cost-issue-42",
		"1. The wire":                              "1-the-wire",
		"What a 2025-11-25 client sees":            "what-a-2025-11-25-client-sees",
		"Per-user sign-in (user_oauth)":            "per-user-sign-in-user_oauth",
		"Stop 26 (2026-12-05): a [link](x.md) too": "stop-26-2026-12-05-a-link-too",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
	a := anchors("# T\n## Limits\n```\n## not a heading\n```\n### Limits\n")
	if !a["limits"] || !a["limits-1"] || a["not-a-heading"] {
		t.Errorf("anchors: %v", a)
	}
}

// yamlBlockAfter is the first ```yaml block after marker in md.
func yamlBlockAfter(t *testing.T, md, marker string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, marker)
	if !ok {
		t.Fatalf("no %q", marker)
	}
	_, block, ok := strings.Cut(rest, "```yaml\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatalf("no yaml block after %q", marker)
	}
	return block
}

// The README's example is the config the first-config guide ends with,
// word for word, and `gateway check` takes it; without the backend token
// it names the variable, as the guide says.
func TestDocs_ReadmeExampleConfigIsChecked(t *testing.T) {
	readme := yamlBlockAfter(t, string(mustRead(t, "README.md")), "\n## An example config\n")
	guide := yamlBlockAfter(t, string(mustRead(t, "docs", "guide", "first-config.md")), "\n## Step 5: real backends\n")
	if readme != guide {
		t.Fatalf("the README's example and the guide's last config differ:\n%s\n---\n%s", readme, guide)
	}
	path := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(path, []byte(readme), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway")
	stdout, stderr, code := runBinary(t, bin, []string{"GITHUB_MCP_TOKEN=t0ken"}, "check", "--config", path)
	if code != 0 || !strings.Contains(stdout, "ok: 1 virtual host(s), 2 backend(s), auth jwt") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	t.Setenv("GITHUB_MCP_TOKEN", "") // restored after the test
	os.Unsetenv("GITHUB_MCP_TOKEN")
	_, stderr, code = runBinary(t, bin, nil, "check", "--config", path)
	if code != 1 || !strings.Contains(stderr, "GITHUB_MCP_TOKEN") {
		t.Fatalf("without the token: exit %d, stderr %q", code, stderr)
	}
}
