package wire

import (
	"net/http"
	"testing"
)

// The revision's errors table (protocol 2026-07-28): each of its codes
// with its status, and a call's own failures answered 200 like results.
func TestModernStatus(t *testing.T) {
	for code, want := range map[int64]int{
		CodeMethodNotFound:             http.StatusNotFound,
		CodeHeaderMismatch:             http.StatusBadRequest,
		CodeMissingClientCapability:    http.StatusBadRequest,
		CodeUnsupportedProtocolVersion: http.StatusBadRequest,
		CodeInvalidParams:              http.StatusOK,
		CodeInternalError:              http.StatusOK,
		CodeRateLimited:                http.StatusOK, // its 429 is the router's Failure's
		-32002:                         http.StatusOK, // a backend's resource not found
	} {
		if got := ModernStatus(code); got != want {
			t.Errorf("ModernStatus(%d) = %d, want %d", code, got, want)
		}
	}
}
