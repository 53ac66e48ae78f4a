package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// decodeMeta reads a record as the store writes it exactly as
// encoding/json reads it, and leaves to encoding/json what it does not
// know.
func TestDecodeMeta_AsEncodingJSON(t *testing.T) {
	full := &Session{Principal: "alice \u00e9\"x", VHost: "v", ProtocolVersion: "2025-11-25",
		ClientInfo: json.RawMessage(`{"name":"c","version":"1"}`), ClientCapabilities: json.RawMessage(`{"elicitation":{}}`),
		LogLevel: "debug", CreatedAt: time.Date(2026, 12, 5, 1, 2, 3, 456789000, time.FixedZone("x", 3600))}
	written, _ := json.Marshal(full)
	empty, _ := json.Marshal(&Session{})
	for _, raw := range []string{string(written), string(empty),
		`{"principal":"a","createdAt":"2026-12-05T01:02:03Z"}`,
		`{"principal":"a","extra":1}`, // unknown: encoding/json decides
		`{"principal":5}`,             // wrong type: encoding/json refuses
		`{"createdAt":"yesterday"}`,
		`{"clientInfo":null,"principal":"p"}`,
	} {
		var want Session
		wantErr := json.Unmarshal([]byte(raw), &want)
		var got Session
		if decodeMeta([]byte(raw), &got) {
			if wantErr != nil {
				t.Errorf("%s: decoded, encoding/json refuses: %v", raw, wantErr)
			} else if !reflect.DeepEqual(got, want) && !(got.CreatedAt.Equal(want.CreatedAt) && sameButTime(got, want)) {
				t.Errorf("%s:\n got  %+v\n want %+v", raw, got, want)
			}
		} else if !reflect.DeepEqual(got, Session{}) {
			t.Errorf("%s: declined but left %+v", raw, got)
		}
	}
	var got Session
	if !decodeMeta(written, &got) {
		t.Fatal("a record the store wrote was left to encoding/json")
	}
}

func sameButTime(a, b Session) bool {
	a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
	return reflect.DeepEqual(a, b)
}
