package tests

// What the repository holds: sources, not build outputs.

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// No tracked file is a compiled binary: a 56 MB lambda and a 9 MB
// mcpbench were each committed once by a build at the root.
func TestRepo_TracksNoBinaries(t *testing.T) {
	out, err := exec.Command("git", "-C", repoPath(), "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout here: %v", err)
	}
	for _, name := range bytes.Split(bytes.TrimRight(out, "\x00"), []byte{0}) {
		f, err := os.Open(repoPath(string(name)))
		if err != nil {
			continue // deleted in the work tree
		}
		head := make([]byte, 4)
		n, _ := f.Read(head)
		f.Close()
		if n == 4 && string(head) == "\x7fELF" {
			t.Errorf("%s is a compiled binary: git rm --cached it (.gitignore lists build outputs)", name)
		}
	}
}
