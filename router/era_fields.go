package router

import (
	"bytes"
	"encoding/json"
)

// A 2026-07-28 backend's results carry the revision's envelope: resultType,
// ttlMs and cacheScope at the top, and its own serverInfo in _meta. A
// 2025-era session has no such fields (its client may refuse or misread
// them), and the server it talks to is the gateway, never a backend: so
// a routed result on its way to a 2025 session loses them. A 2026-07-28
// client's results get the gateway's serverInfo instead
// (decorateModern).

// modernEnvelopeFields are the top-level fields only the 2026-07-28
// revision has.
var modernEnvelopeFields = [...]string{"resultType", "ttlMs", "cacheScope"}

// legacyResult drops the 2026-07-28 envelope from a result for a 2025-era
// session; a result with none passes byte for byte.
func legacyResult(result json.RawMessage) json.RawMessage {
	if !bytes.Contains(result, []byte(`"resultType"`)) && !bytes.Contains(result, []byte(`"ttlMs"`)) &&
		!bytes.Contains(result, []byte(`"cacheScope"`)) && !bytes.Contains(result, []byte(metaServerInfo)) {
		return result
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(result, &m) != nil || m == nil {
		return result
	}
	changed := false
	for _, f := range modernEnvelopeFields {
		if _, ok := m[f]; ok {
			delete(m, f)
			changed = true
		}
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(m["_meta"], &meta) == nil && meta != nil {
		if _, ok := meta[metaServerInfo]; ok {
			delete(meta, metaServerInfo)
			if len(meta) == 0 {
				delete(m, "_meta")
			} else {
				m["_meta"], _ = json.Marshal(meta)
			}
			changed = true
		}
	}
	if !changed {
		return result
	}
	out, err := json.Marshal(m)
	if err != nil {
		return result
	}
	return out
}
