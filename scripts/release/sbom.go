// The SBOM check: a CycloneDX document (made by cyclonedx-gomod from the
// binary itself) must name the release and list every module the binary
// links, at the version it links.
package main

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// cycloneDX is the part of a CycloneDX JSON document checked here.
type cycloneDX struct {
	BOMFormat string `json:"bomFormat"`
	Metadata  struct {
		Component struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"component"`
	} `json:"metadata"`
	Components []struct {
		Purl string `json:"purl"`
	} `json:"components"`
}

// checkSBOM checks the SBOM at path against bi, the build information of
// the binary it describes, and returns how many modules it checked.
func checkSBOM(path string, bi *buildinfo.BuildInfo, version string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var doc cycloneDX
	if err := json.Unmarshal(data, &doc); err != nil {
		return 0, fmt.Errorf("not JSON: %w", err)
	}
	if doc.BOMFormat != "CycloneDX" {
		return 0, fmt.Errorf("bomFormat %q, want CycloneDX", doc.BOMFormat)
	}
	if doc.Metadata.Component.Version != version {
		return 0, fmt.Errorf("describes %s %s, want version %s", doc.Metadata.Component.Name, doc.Metadata.Component.Version, version)
	}
	listed := map[string]bool{}
	for _, c := range doc.Components {
		listed[purlModule(c.Purl)] = true
	}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		if !listed[strings.ToLower(d.Path+"@"+d.Version)] {
			return 0, fmt.Errorf("the binary links %s %s, which the SBOM does not list", d.Path, d.Version)
		}
	}
	if len(bi.Deps) == 0 {
		return 0, fmt.Errorf("the binary records no modules: nothing to check the SBOM against")
	}
	return len(bi.Deps), nil
}

// purlModule turns pkg:golang/github.com/a/b@v1.2.3?type=module into
// github.com/a/b@v1.2.3 (lower case); other package URLs into "".
func purlModule(purl string) string {
	rest, ok := strings.CutPrefix(purl, "pkg:golang/")
	if !ok {
		return ""
	}
	rest, _, _ = strings.Cut(rest, "?")
	rest, _, _ = strings.Cut(rest, "#")
	if u, err := url.PathUnescape(rest); err == nil {
		rest = u
	}
	return strings.ToLower(rest)
}
