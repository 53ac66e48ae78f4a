package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestRead_LinkTimeValuesWin(t *testing.T) {
	got := Read("v1.2.3", "abc123")
	if got.Version != "v1.2.3" || got.Commit != "abc123" || got.GoVersion != runtime.Version() {
		t.Fatalf("got %+v", got)
	}
}

func TestFillFrom_UsesTheToolchainsRecordWhenNothingWasStamped(t *testing.T) {
	cases := []struct {
		name        string
		stamped     Info
		bi          debug.BuildInfo
		wantVersion string
		wantCommit  string
	}{
		{"vcs revision and module version", Info{}, debug.BuildInfo{
			Main:     debug.Module{Version: "v0.0.0-20261203100000-0123456789ab"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "false"}},
		}, "v0.0.0-20261203100000-0123456789ab", "0123456789abcdef"},
		{"a modified tree is marked dirty", Info{}, debug.BuildInfo{
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123"}, {Key: "vcs.modified", Value: "true"}},
		}, "", "0123+dirty"},
		{"(devel) is no version", Info{}, debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "", ""},
		{"stamped values are kept", Info{Version: "v2", Commit: "c"}, debug.BuildInfo{
			Main:     debug.Module{Version: "v9"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "other"}},
		}, "v2", "c"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := fillFrom(tc.stamped, &tc.bi)
			if got.Version != tc.wantVersion || got.Commit != tc.wantCommit {
				t.Fatalf("got version %q commit %q, want %q %q", got.Version, got.Commit, tc.wantVersion, tc.wantCommit)
			}
		})
	}
}

func TestRead_NeverEmpty(t *testing.T) {
	got := Read("", "")
	if got.Version == "" || got.Commit == "" {
		t.Fatalf("got %+v", got)
	}
}
