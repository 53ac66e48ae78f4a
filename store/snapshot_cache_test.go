package store

import (
	"fmt"
	"testing"
)

// A stored snapshot is decoded once per distinct text; another text is
// another snapshot; bad JSON is an error and is not kept; the cache holds
// at most maxCachedSnapshots.
func TestSnapshotCache(t *testing.T) {
	var c snapshotCache
	text := `{"key":"one","protocolVersion":"2025-11-25","capabilities":{"tools":{}}}`
	a, err := c.decode(text)
	if err != nil || a.Key != "one" || a.ProtocolVersion != "2025-11-25" {
		t.Fatalf("decode: %+v %v", a, err)
	}
	b, _ := c.decode(text)
	if b == a || string(b.Capabilities) != string(a.Capabilities) || len(c.m) != 1 {
		t.Fatalf("the same text again: %+v, %d cached (want a copy of the one decoded)", b, len(c.m))
	}
	b.Capabilities[0] = 'X' // a caller's change stays its own
	if c2, _ := c.decode(text); c2.Capabilities[0] != '{' {
		t.Fatal("a caller's change reached the cache")
	}
	if d, _ := c.decode(`{"key":"one","error":"down"}`); d.Error != "down" {
		t.Fatalf("another text: %+v", d)
	}
	if _, err := c.decode(`{"key":`); err == nil || len(c.m) != 2 {
		t.Fatalf("bad JSON: %v, %d kept", err, len(c.m))
	}
	for i := range maxCachedSnapshots + 10 {
		if _, err := c.decode(fmt.Sprintf(`{"key":"k%d"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.m) > maxCachedSnapshots {
		t.Fatalf("%d cached, more than %d", len(c.m), maxCachedSnapshots)
	}
}
