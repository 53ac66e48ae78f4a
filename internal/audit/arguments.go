package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// ArgumentsSHA256 is the hex SHA-256 of the canonical JSON of a
// tools/call's arguments: object keys sorted, no insignificant white
// space, numbers as the client wrote them, strings as encoding/json
// writes them. Two calls with the same arguments written differently
// (key order, spacing) have the same digest, so an auditor can match a
// call to known arguments without the log holding them. Absent arguments
// digest as {}.
func ArgumentsSHA256(raw json.RawMessage) string {
	canonical := []byte("{}")
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			if b, err := json.Marshal(v); err == nil {
				canonical = b
			}
		} else {
			canonical = raw // not JSON: digested as sent
		}
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}
