// SHA256SUMS: the checksum file a release publishes, in the format
// `sha256sum -c` and `shasum -a 256 -c` read.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// writeSums writes "<hex>  <base name>" for each file, sorted by name.
func writeSums(out string, files []string) error {
	var b strings.Builder
	files = slices.Clone(files)
	slices.SortFunc(files, func(a, b string) int { return strings.Compare(filepath.Base(a), filepath.Base(b)) })
	for _, f := range files {
		sum, err := fileSHA256(f)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", sum, filepath.Base(f))
	}
	return os.WriteFile(out, []byte(b.String()), 0o644)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkSums verifies every line of dir/SHA256SUMS against the file it
// names in dir, and returns the names listed.
func checkSums(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		want, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(want) != 64 || name == "" || strings.ContainsAny(name, "/\\") {
			return nil, fmt.Errorf("SHA256SUMS:%d: want \"<sha256 hex>  <file name>\", got %q", n, sc.Text())
		}
		got, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("SHA256SUMS:%d: %w", n, err)
		}
		if got != want {
			return nil, fmt.Errorf("SHA256SUMS:%d: %s has sha256 %s, the file lists %s", n, name, got, want)
		}
		names = append(names, name)
	}
	return names, sc.Err()
}
