package metrics

import "github.com/prometheus/client_golang/prometheus"

// ObserveAuditDropped exports mcpgw_audit_dropped_total: the audit lines
// dropped because the audit output did not keep up (read at scrape time
// from the audit writer's count).
func (m *Metrics) ObserveAuditDropped(dropped func() uint64) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "mcpgw_audit_dropped_total",
		Help: "Audit lines dropped because the audit buffer was full (the audit output did not keep up).",
	}, func() float64 { return float64(dropped()) }))
}
