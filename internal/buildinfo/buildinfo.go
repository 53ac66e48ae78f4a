// Package buildinfo says which build of the gateway is running, for
// `--version`, the mcpgw_build_info metric and serverInfo.version.
//
// Release builds stamp the version and commit at link time
// (-ldflags "-X main.version=… -X main.commit=…": the Makefile, the
// Dockerfile and the Lambda build do). A plain `go build` or `go install`
// stamps nothing, and Read falls back to what the Go toolchain embeds in
// every binary: the module version and the VCS revision.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Info identifies a build.
type Info struct {
	// Version is the release version ("v1.2.0", "v1.2.0-3-gabc1234"), the
	// module version the toolchain recorded, or "devel".
	Version string
	// Commit is the VCS revision, with "+dirty" when the tree had
	// uncommitted changes, or "unknown".
	Commit string
	// GoVersion is the toolchain the binary was built with.
	GoVersion string
}

// Read returns the build's identity: version and commit as stamped at link
// time (empty when they were not), else as the toolchain recorded them.
func Read(version, commit string) Info {
	info := Info{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		info = fillFrom(info, bi)
	}
	if info.Version == "" {
		info.Version = "devel"
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// fillFrom fills what the link-time values left empty from bi.
func fillFrom(info Info, bi *debug.BuildInfo) Info {
	if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	if info.Commit != "" {
		return info
	}
	var revision, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if revision != "" && modified == "true" {
		revision += "+dirty"
	}
	info.Commit = revision
	return info
}

// String is the line `gateway --version` prints.
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, %s)", i.Version, i.Commit, i.GoVersion)
}
