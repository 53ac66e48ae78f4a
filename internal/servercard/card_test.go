package servercard

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDefaultName_IsAValidReverseDNSName(t *testing.T) {
	for base, want := range map[string]string{
		"https://gw.example.com":         "com.example.gw/demo",
		"http://127.0.0.1:8080":          "1.0.0.127/demo",
		"http://[::1]:8080":              "--1/demo",
		"https://Gw.Example.com:443/api": "com.example.gw/demo",
		"":                               "local/demo",
	} {
		got := DefaultName(base, "demo")
		if got != want || !NameRE.MatchString(got) {
			t.Errorf("DefaultName(%q) = %q, want %q (valid: %v)", base, got, want, NameRE.MatchString(got))
		}
	}
}

func TestBuild_DefaultsAndNoPrimitives(t *testing.T) {
	doc := Build(nil, "a-very-long-virtual-host-name", Facts{BaseURL: "https://gw", Version: "1.0", ProtocolVersions: []string{"2026-07-28"}})
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	if d := m["description"].(string); d == "" || len(d) > MaxDescription {
		t.Fatalf("description %q", d)
	}
	if _, ok := m["_meta"]; ok || strings.Contains(string(doc), "authentication") {
		t.Fatalf("%s: no authentication without bearer tokens", doc)
	}
	if ETag(doc) != ETag(append([]byte(nil), doc...)) || ETag(doc) == ETag(append(doc, ' ')) {
		t.Fatal("the ETag is a digest of the bytes")
	}
}
