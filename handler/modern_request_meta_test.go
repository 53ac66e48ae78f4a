package handler

import (
	"encoding/json"
	"reflect"
	"testing"
)

// paramsMeta reads _meta as encoding/json reads it into requestMeta,
// whatever the members' order, repetition, nulls and types.
func TestParamsMeta_AsEncodingJSON(t *testing.T) {
	for _, meta := range []string{
		`{}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c"},"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug","progressToken":7}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":null}`,
		`{"io.modelcontextprotocol/protocolVersion":null,"io.modelcontextprotocol/protocolVersion":"x\u00e9"}`,
		`{"io.modelcontextprotocol/protocolVersion":5}`,
		`{"IO.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
		`{"progressToken":null,"other":{"a":[1]}}`,
		`{"io.modelcontextprotocol/clientInfo":null}`,
		`{"io.modelcontextprotocol/logLevel":"a\"b"}`,
	} {
		var want requestMeta
		wantOK := json.Unmarshal([]byte(meta), &want) == nil
		got, ok := paramsMeta(json.RawMessage(`{"name":"x","_meta":` + meta + `}`))
		if ok != wantOK || (ok && !reflect.DeepEqual(got, want)) {
			t.Errorf("%s:\n got  %+v %v\n want %+v %v", meta, got, ok, want, wantOK)
		}
	}
}
