// Verification of a finished release directory: what CI checks after
// `make release`, and what a user's download should pass. Every binary is
// checked by its file header and the build information the Go toolchain
// embeds (platform, static, stamped version); the one for this machine's
// platform is also run. Each SBOM must list every module its binary
// links.
package main

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// platform is a GOOS/GOARCH pair a release ships.
type platform struct{ goos, goarch string }

// archivePlatforms are the platforms of the release archives.
var archivePlatforms = []platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}

// lambdaArchs maps Lambda's architecture names to GOARCH.
var lambdaArchs = []struct{ name, goarch string }{{"arm64", "arm64"}, {"x86_64", "amd64"}}

func archiveName(version string, p platform) string {
	return fmt.Sprintf("mcpgw_%s_%s_%s.tar.gz", version, p.goos, p.goarch)
}

func lambdaName(version, arch string) string {
	return fmt.Sprintf("mcpgw-lambda_%s_%s.zip", version, arch)
}

// sbomName is the SBOM of an artifact: the artifact's name + .cdx.json.
func sbomName(artifact string) string { return artifact + ".cdx.json" }

// expectedFiles is every file a release of version holds besides
// SHA256SUMS, sorted.
func expectedFiles(version string) []string {
	var out []string
	for _, p := range archivePlatforms {
		out = append(out, archiveName(version, p), sbomName(archiveName(version, p)))
	}
	for _, a := range lambdaArchs {
		out = append(out, lambdaName(version, a.name), sbomName(lambdaName(version, a.name)))
	}
	slices.Sort(out)
	return out
}

// verify checks the release directory dir of version and commit ("": not
// checked), printing one line per artifact checked.
func verify(w io.Writer, dir, version, commit string) error {
	listed, err := checkSums(dir)
	if err != nil {
		return err
	}
	want := expectedFiles(version)
	slices.Sort(listed)
	if !slices.Equal(listed, want) {
		return fmt.Errorf("SHA256SUMS lists %q, want %q", listed, want)
	}
	present, err := regularFiles(dir)
	if err != nil {
		return err
	}
	wantPresent := append(slices.Clone(want), "SHA256SUMS")
	slices.Sort(wantPresent)
	if !slices.Equal(present, wantPresent) {
		return fmt.Errorf("%s holds %q, want %q and SHA256SUMS", dir, present, want)
	}
	fmt.Fprintf(w, "release: SHA256SUMS: %d files match\n", len(listed))
	tmp, err := os.MkdirTemp("", "mcpgw-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, p := range archivePlatforms {
		name := archiveName(version, p)
		bin := filepath.Join(tmp, name+".gateway")
		if err := extractArchive(filepath.Join(dir, name), strings.TrimSuffix(name, ".tar.gz"), bin); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := checkArtifact(w, dir, name, bin, p, version, commit, "github.com/mcpgw/gateway/cmd/gateway"); err != nil {
			return err
		}
	}
	for _, a := range lambdaArchs {
		name := lambdaName(version, a.name)
		bin := filepath.Join(tmp, name+".bootstrap")
		if err := extractBootstrap(filepath.Join(dir, name), bin); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := checkArtifact(w, dir, name, bin, platform{"linux", a.goarch}, version, commit, "github.com/mcpgw/gateway/cmd/lambda"); err != nil {
			return err
		}
	}
	return nil
}

// checkArtifact checks the binary bin taken out of artifact name: its
// header and build information, its SBOM, and on this machine's platform
// its --version (the Lambda bootstrap is not run: it waits for the
// Lambda runtime API).
func checkArtifact(w io.Writer, dir, name, bin string, p platform, version, commit, mainPkg string) error {
	bi, err := checkBinary(bin, p, version, commit, mainPkg)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	deps, err := checkSBOM(filepath.Join(dir, sbomName(name)), bi, version)
	if err != nil {
		return fmt.Errorf("%s: %w", sbomName(name), err)
	}
	ran := "header and build info checked (not this machine's platform)"
	switch {
	case strings.HasSuffix(mainPkg, "/lambda"):
		ran = "header and build info checked (a Lambda bootstrap is not run outside Lambda)"
	case p.goos == runtime.GOOS && p.goarch == runtime.GOARCH:
		out, err := exec.Command(bin, "--version").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: gateway --version: %v: %s", name, err, out)
		}
		if !strings.HasPrefix(string(out), "gateway "+version+" (commit ") {
			return fmt.Errorf("%s: gateway --version printed %q, want it to name %s", name, out, version)
		}
		ran = "ran: " + strings.TrimSpace(string(out))
	}
	fmt.Fprintf(w, "release: %s: %s/%s, SBOM lists its %d modules; %s\n", name, p.goos, p.goarch, deps, ran)
	return nil
}

// regularFiles lists the names of dir's regular files, sorted.
func regularFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// extractArchive checks the archive's layout (everything under top/,
// owned by 0:0, one date, an executable gateway) and writes the gateway
// to bin.
func extractArchive(path, top, bin string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	var found bool
	var first *tar.Header
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if first == nil {
			first = hdr
		}
		switch {
		case !strings.HasPrefix(hdr.Name, top+"/"):
			return fmt.Errorf("entry %s is outside %s/", hdr.Name, top)
		case hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "":
			return fmt.Errorf("entry %s is owned by %d:%d (%s:%s), want 0:0 and no names", hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname)
		case !hdr.ModTime.Equal(first.ModTime):
			return fmt.Errorf("entry %s is dated %v, %s %v: want one date", hdr.Name, hdr.ModTime, first.Name, first.ModTime)
		}
		if hdr.Name == top+"/gateway" {
			if hdr.Mode != 0o755 {
				return fmt.Errorf("gateway has mode %o, want 755", hdr.Mode)
			}
			if err := writeFile(bin, tr); err != nil {
				return err
			}
			found = true
		}
	}
	if !found {
		return fmt.Errorf("no %s/gateway in the archive", top)
	}
	return nil
}

// extractBootstrap writes the Lambda zip's executable bootstrap to bin.
func extractBootstrap(path, bin string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name != "bootstrap" {
			continue
		}
		if f.Mode()&0o111 == 0 {
			return fmt.Errorf("bootstrap has mode %v: Lambda runs it only if it is executable", f.Mode())
		}
		r, err := f.Open()
		if err != nil {
			return err
		}
		defer r.Close()
		return writeFile(bin, r)
	}
	return fmt.Errorf("no bootstrap in the zip")
}

func writeFile(path string, r io.Reader) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
