package wire

import "testing"

func TestProtocolVersions_WhoSpeaksWhat(t *testing.T) {
	for _, tc := range []struct {
		v             string
		serves, knows bool
	}{
		{ProtocolVersion20251125, true, true},
		{ProtocolVersion20250618, true, true},
		{ProtocolVersion20250326, true, true},
		{ProtocolVersion20241105, false, true}, // backends only: the legacy HTTP+SSE transport
		{"2026-07-28", false, false},
		{"", false, false},
	} {
		if got := ServesProtocolVersion(tc.v); got != tc.serves {
			t.Errorf("ServesProtocolVersion(%q) = %v, want %v", tc.v, got, tc.serves)
		}
		if got := KnowsProtocolVersion(tc.v); got != tc.knows {
			t.Errorf("KnowsProtocolVersion(%q) = %v, want %v", tc.v, got, tc.knows)
		}
	}
	if !ServesProtocolVersion(LatestProtocolVersion) || !ServesProtocolVersion(BatchProtocolVersion) || !ServesProtocolVersion(DefaultProtocolVersion) {
		t.Error("the latest, batch and default versions must be ones the gateway serves")
	}
	if !KnowsProtocolVersion(LegacySSEProtocolVersion) {
		t.Error("the legacy SSE version must be one the backend client knows")
	}
}

func TestProtocolVersions_OfARequest(t *testing.T) {
	for _, tc := range []struct{ header, negotiated, want string }{
		{"2025-06-18", "2025-11-25", "2025-06-18"},
		{"", "2025-11-25", "2025-11-25"},
		{"", "", DefaultProtocolVersion},
	} {
		if got := RequestProtocolVersion(tc.header, tc.negotiated); got != tc.want {
			t.Errorf("RequestProtocolVersion(%q, %q) = %q, want %q", tc.header, tc.negotiated, got, tc.want)
		}
	}
}

// The method table agrees with itself: a method that mirrors a name
// targets one backend (by that name, or a Tasks method by its sealed task
// id), a multi-round-trip or hooked method is routed and served in both
// generations, and session-only methods are not modern.
func TestMethods_TableIsConsistent(t *testing.T) {
	for name, m := range methods {
		switch {
		case m.NameField != "" && m.Routed == "" && !(m.Task && m.NameField == "taskId"):
			t.Errorf("%s mirrors %s in Mcp-Name but routes on nothing", name, m.NameField)
		case (m.MultiRoundTrip || m.Hooked) && (m.Routed == "" || !m.Modern):
			t.Errorf("%s is multi-round-trip or hooked but not a routed method of both generations", name)
		case m.Session && m.Modern:
			t.Errorf("%s is both session-only and modern", name)
		case m.Task && (m.Routed != "" || !m.Modern || m.Hooked):
			t.Errorf("%s is a Tasks method but routed by name, hooked or not modern", name)
		}
	}
	if LogLevelRank("debug") != 1 || LogLevelRank("emergency") != 8 || LogLevelRank("loud") != 0 {
		t.Error("log level ranks")
	}
}
