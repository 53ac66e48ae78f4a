package handler

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mcpgw/gateway/internal/audit"
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/mcpgw/gateway/router"
)

// Every refusal's audit line has a reason: the limit its data names,
// else its message, else its code; a denial without a named rule too.
func TestAudit_EveryRefusalHasAReason(t *testing.T) {
	limited := func(data, msg string) *requestNote {
		return &requestNote{hasCode: true, code: wire.CodeRateLimited, errData: json.RawMessage(data), errMsg: msg}
	}
	for name, c := range map[string]struct {
		n       *requestNote
		outcome string
		reason  string
	}{
		"a named limit":  {limited(`{"limit":"limits.tasks_per_principal","max":2}`, "too many"), audit.OutcomeRateLimited, "limits.tasks_per_principal"},
		"no data":        {limited(``, "too many running tasks"), audit.OutcomeRateLimited, "too many running tasks"},
		"nothing at all": {limited(`{}`, ""), audit.OutcomeRateLimited, "refused (-32029)"},
		"a named denial": {&requestNote{audit: &router.AuditNote{Denied: true, Reason: "access: access[0]"}}, audit.OutcomeDenied, "access: access[0]"},
		"a bare denial":  {&requestNote{audit: &router.AuditNote{Denied: true}, hasCode: true, code: -32602, errMsg: "denied"}, audit.OutcomeDenied, "denied"},
		"not a refusal":  {&requestNote{hasCode: true, code: -32603, errMsg: "boom"}, audit.OutcomeError, ""},
	} {
		t.Run(name, func(t *testing.T) {
			outcome, reason := outcomeOf(c.n, http.StatusOK)
			if outcome != c.outcome || reason != c.reason {
				t.Fatalf("outcome %q reason %q, want %q %q", outcome, reason, c.outcome, c.reason)
			}
		})
	}
}
