package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestWriteArchive_SameBytesWhateverTheFilesDates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mcpgw_v1.0.0_linux_amd64")
	if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("gateway", "binary", 0o700)
	write("README.md", "readme", 0o600)
	write("docs/a.md", "a", 0o640)
	out1, out2 := filepath.Join(t.TempDir(), "1.tar.gz"), filepath.Join(t.TempDir(), "2.tar.gz")
	if err := writeArchive(out1, dir, 1700000000); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	for _, f := range []string{"gateway", "README.md", "docs/a.md"} {
		if err := os.Chtimes(filepath.Join(dir, f), later, later); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeArchive(out2, dir, 1700000000); err != nil {
		t.Fatal(err)
	}
	a, b := mustReadFile(t, out1), mustReadFile(t, out2)
	if !bytes.Equal(a, b) {
		t.Fatal("two archives of the same files differ")
	}
	gz, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	if gz.Name != "" || !gz.ModTime.IsZero() {
		t.Errorf("gzip header carries name %q, time %v", gz.Name, gz.ModTime)
	}
	tr := tar.NewReader(gz)
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Name+" "+strings.TrimLeft(os.FileMode(h.Mode).String(), "-"))
		if h.ModTime.Unix() != 1700000000 || h.Uid != 0 || h.Uname != "" {
			t.Errorf("%s: time %v uid %d uname %q", h.Name, h.ModTime, h.Uid, h.Uname)
		}
	}
	want := "mcpgw_v1.0.0_linux_amd64/README.md rw-r--r--,mcpgw_v1.0.0_linux_amd64/docs/a.md rw-r--r--,mcpgw_v1.0.0_linux_amd64/gateway rwxr-xr-x"
	if strings.Join(got, ",") != want {
		t.Errorf("entries %q,\nwant %q", strings.Join(got, ","), want)
	}
	if err := extractArchive(out1, "mcpgw_v1.0.0_linux_amd64", filepath.Join(t.TempDir(), "bin")); err != nil {
		t.Errorf("extractArchive of a good archive: %v", err)
	}
	if err := extractArchive(out1, "mcpgw_v1.0.0_linux_arm64", filepath.Join(t.TempDir(), "bin")); err == nil {
		t.Error("extractArchive accepted an archive whose folder names another platform")
	}
}

func TestCheckSums_NamesTheFileThatChanged(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"b.zip", "a.tar.gz"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sums := filepath.Join(dir, "SHA256SUMS")
	if err := writeSums(sums, []string{filepath.Join(dir, "b.zip"), filepath.Join(dir, "a.tar.gz")}); err != nil {
		t.Fatal(err)
	}
	if s := string(mustReadFile(t, sums)); !strings.HasSuffix(strings.Split(s, "\n")[0], "  a.tar.gz") {
		t.Errorf("SHA256SUMS not sorted by name, or not in sha256sum's format:\n%s", s)
	}
	if names, err := checkSums(dir); err != nil || len(names) != 2 {
		t.Fatalf("checkSums: %v %v", names, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.zip"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := checkSums(dir); err == nil || !strings.Contains(err.Error(), "b.zip has sha256") {
		t.Fatalf("checkSums after a change: %v, want b.zip named", err)
	}
}

// commitT is the commit buildSmall stamps.
const commitT = "0123456789abcdef0123456789abcdef01234567"

// buildSmall builds the gateway the way release.sh does, for linux and
// goarch, stamped with version and commitT.
func buildSmall(t *testing.T, goarch, version string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), "gateway-"+goarch)
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w -X main.version="+version+" -X main.commit=0123456789abcdef0123456789abcdef01234567",
		"-o", bin, "github.com/mcpgw/gateway/cmd/gateway")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+goarch, "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func TestCheckBinary_PlatformStaticAndVersion(t *testing.T) {
	const pkg = "github.com/mcpgw/gateway/cmd/gateway"
	if runtime.GOOS != "linux" {
		t.Skip("checks a linux binary built for this machine's GOARCH")
	}
	host := runtime.GOARCH
	other := map[string]string{"amd64": "arm64"}[host]
	if other == "" {
		other = "amd64"
	}
	bin := buildSmall(t, host, "v9.8.7")
	if _, err := checkBinary(bin, platform{"linux", host}, "v9.8.7", commitT, pkg); err != nil {
		t.Fatalf("a good binary: %v", err)
	}
	for _, tc := range []struct {
		p       platform
		version string
		want    string
	}{
		{platform{"linux", other}, "v9.8.7", "want a 64-bit"},
		{platform{"darwin", host}, "v9.8.7", "not a Mach-O"},
		{platform{"linux", host}, "v7.7.7-other", "version v7.7.7-other is not stamped"},
	} {
		if _, err := checkBinary(bin, tc.p, tc.version, commitT, pkg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %s: %v, want %q", tc.p, tc.version, err, tc.want)
		}
	}
	if _, err := checkBinary(bin, platform{"linux", host}, "v9.8.7", "fedcba9876543210fedcba9876543210fedcba98", pkg); err == nil || !strings.Contains(err.Error(), "commit") {
		t.Errorf("another commit: %v, want it refused", err)
	}
	if _, err := checkBinary(bin, platform{"linux", host}, "v9.8.7", commitT, "github.com/mcpgw/gateway/cmd/lambda"); err == nil {
		t.Error("checkBinary took the gateway for the Lambda bootstrap")
	}
	// A dynamically linked executable is refused on Linux.
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/bin/sh"); err == nil {
			if err := checkHeader("/bin/sh", platform{"linux", runtime.GOARCH}); err == nil || !strings.Contains(err.Error(), "static") {
				t.Errorf("/bin/sh: %v, want it refused as dynamically linked", err)
			}
		}
	}
}

func TestCheckSBOM_EveryLinkedModuleListed(t *testing.T) {
	bin := buildSmall(t, runtime.GOARCH, "v9.8.7")
	bi, err := buildinfo.ReadFile(bin)
	if err != nil || len(bi.Deps) < 2 {
		t.Fatalf("build info: %v (%d modules)", err, len(bi.Deps))
	}
	doc := map[string]any{"bomFormat": "CycloneDX", "metadata": map[string]any{"component": map[string]any{"name": "demo", "version": "v9.8.7"}}}
	var comps []map[string]any
	for _, d := range bi.Deps {
		comps = append(comps, map[string]any{"purl": "pkg:golang/" + d.Path + "@" + d.Version + "?type=module&goos=linux"})
	}
	sbom := func(comps []map[string]any) string {
		doc["components"] = comps
		b, _ := json.Marshal(doc)
		p := filepath.Join(t.TempDir(), "x.cdx.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if n, err := checkSBOM(sbom(comps), bi, "v9.8.7"); err != nil || n != len(bi.Deps) {
		t.Fatalf("a complete SBOM: %d, %v", n, err)
	}
	if _, err := checkSBOM(sbom(comps[1:]), bi, "v9.8.7"); err == nil || !strings.Contains(err.Error(), bi.Deps[0].Path) {
		t.Fatalf("an SBOM missing %s: %v", bi.Deps[0].Path, err)
	}
	if _, err := checkSBOM(sbom(comps), bi, "v7.7.7-other"); err == nil {
		t.Fatal("an SBOM of another version passed")
	}
}

func mustReadFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
