// Package skillserver is an MCP server on the go-sdk that serves Agent
// Skills under the Skills extension (SEP-2640, its Final text in
// modelcontextprotocol/ext-skills): every file of a skill directory tree
// as a skill:// resource (resources/list and resources/read, by go-sdk),
// the extension declared in capabilities.extensions, and skills/list,
// skills/get and resources/directory/read, which go-sdk v1.8 does not know
// (it refuses methods outside its table before any middleware sees them),
// answered by an HTTP front in front of go-sdk's handler (front.go).
//
// It is the skills backend of the gateway's tests and of
// scripts/conformance.sh (tests/cmd/skills-backend), with the fixtures
// FixtureOne and FixtureTwo: nested skill paths, a skill nested in
// another, supporting files, and a skill path both serve.
package skillserver

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

//go:embed testdata
var fixtures embed.FS

// FixtureOne and FixtureTwo are the two skill trees the gateway's tests
// serve from two backends: one has acme/billing (a skill with a script)
// and acme/billing/refunds nested in it, the other pdf-processing with
// templates in subdirectories; both have git-workflow, two unrelated
// skills at the same path.
var FixtureOne, FixtureTwo = sub("testdata/one"), sub("testdata/two")

func sub(dir string) fs.FS {
	f, err := fs.Sub(fixtures, dir)
	if err != nil {
		panic(err)
	}
	return f
}

// Scheme is the URI scheme skills are served under.
const Scheme = "skill://"

// skillFile is the name of a skill's root file.
const skillFile = "SKILL.md"

// File is one file of the tree.
type File struct {
	Path     string // relative to the tree's root, "/"-separated
	Data     []byte
	MIMEType string
}

// URI is the file's resource URI.
func (f *File) URI() string { return Scheme + f.Path }

// Skill is one skill: a directory holding a SKILL.md.
type Skill struct {
	Path        string          // the skill path: "acme/billing/refunds"
	Frontmatter json.RawMessage // SKILL.md's YAML frontmatter as JSON
	Name        string
	Description string
	// Files are every file under the skill's directory, nested skills'
	// included (the SEP's completeness rule), sorted.
	Files []*File
}

// URI is the skill's SKILL.md URI.
func (s *Skill) URI() string { return Scheme + s.Path + "/" + skillFile }

// Catalog is a skill tree loaded in memory.
type Catalog struct {
	files  map[string]*File // by path
	skills []*Skill         // by path
	dirs   map[string]bool  // every directory path below the root ("" excluded)
}

// Load reads a skill tree: every directory holding a SKILL.md is a skill,
// whose frontmatter must name it after its directory (the SEP's rule).
func Load(fsys fs.FS) (*Catalog, error) {
	c := &Catalog{files: map[string]*File{}, dirs: map[string]bool{}}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			if p != "." {
				c.dirs[p] = true
			}
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		c.files[p] = &File{Path: p, Data: data, MIMEType: mimeTypeOf(p)}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for p, f := range c.files {
		if path.Base(p) != skillFile {
			continue
		}
		s, err := c.skillAt(path.Dir(p), f)
		if err != nil {
			return nil, err
		}
		c.skills = append(c.skills, s)
	}
	sort.Slice(c.skills, func(i, j int) bool { return c.skills[i].Path < c.skills[j].Path })
	return c, nil
}

// skillAt reads the skill whose SKILL.md is f, in directory dir.
func (c *Catalog) skillAt(dir string, f *File) (*Skill, error) {
	if dir == "." {
		return nil, errors.New("a SKILL.md at the root has no skill path")
	}
	fm, err := frontmatter(f.Data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	name, _ := fm["name"].(string)
	desc, _ := fm["description"].(string)
	if name != path.Base(dir) || desc == "" {
		return nil, fmt.Errorf("%s: frontmatter needs name %q (its directory) and a description", f.Path, path.Base(dir))
	}
	raw, err := json.Marshal(fm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	s := &Skill{Path: dir, Frontmatter: raw, Name: name, Description: desc}
	for p, file := range c.files {
		if strings.HasPrefix(p, dir+"/") {
			s.Files = append(s.Files, file)
		}
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Path < s.Files[j].Path })
	return s, nil
}

// frontmatter decodes the YAML block a SKILL.md begins with.
func frontmatter(data []byte) (map[string]any, error) {
	rest, ok := bytes.CutPrefix(data, []byte("---\n"))
	if !ok {
		return nil, errors.New("no frontmatter: the file must begin with ---")
	}
	block, _, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		return nil, errors.New("the frontmatter does not end with ---")
	}
	var fm map[string]any
	if err := yaml.Unmarshal(block, &fm); err != nil {
		return nil, err
	}
	return fm, nil
}

// mimeTypeOf is a file's media type, by its extension.
func mimeTypeOf(p string) string {
	switch path.Ext(p) {
	case ".md":
		return "text/markdown"
	case ".py":
		return "text/x-python"
	}
	if t := mime.TypeByExtension(path.Ext(p)); t != "" {
		return t
	}
	return "application/octet-stream"
}

// Skills are the catalog's skills, by path.
func (c *Catalog) Skills() []*Skill { return c.skills }

// Files are the catalog's files, by path.
func (c *Catalog) Files() []*File {
	out := make([]*File, 0, len(c.files))
	for _, f := range c.files {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Digest is a file's SEP-2640 digest: sha256:{64 lowercase hex digits}
// of its raw bytes.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Entry is the skill's SEP-2640 entry: its SKILL.md URI, frontmatter, and
// the complete manifest of its files.
func (s *Skill) Entry() map[string]any {
	res := make([]map[string]any, len(s.Files))
	for i, f := range s.Files {
		res[i] = map[string]any{"uri": f.URI(), "digest": Digest(f.Data), "size": len(f.Data)}
	}
	return map[string]any{"uri": s.URI(), "frontmatter": s.Frontmatter, "resources": res}
}

// skillAtURI is the skill whose SKILL.md uri names.
func (c *Catalog) skillAtURI(uri string) *Skill {
	for _, s := range c.skills {
		if s.URI() == uri {
			return s
		}
	}
	return nil
}

// children are the direct children of directory dir ("a/b"), as
// resources/directory/read lists them; ok is false when dir is no
// directory of the tree.
func (c *Catalog) children(dir string) (out []map[string]any, ok bool) {
	if !c.dirs[dir] {
		return nil, false
	}
	out = []map[string]any{}
	for d := range c.dirs {
		if path.Dir(d) == dir {
			out = append(out, map[string]any{"uri": Scheme + d, "name": path.Base(d), "mimeType": "inode/directory"})
		}
	}
	for p, f := range c.files {
		if path.Dir(p) == dir {
			out = append(out, map[string]any{"uri": f.URI(), "name": path.Base(p), "mimeType": f.MIMEType})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["uri"].(string) < out[j]["uri"].(string) })
	return out, true
}
