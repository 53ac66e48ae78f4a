package metrics

import "github.com/prometheus/client_golang/prometheus"

// SetBuildInfo publishes mcpgw_build_info{version,commit,goversion} 1, the
// usual way to tell which build each instance runs (join it on instance in
// queries, or watch a rollout replace one version by the next). Call it
// once, before serving; the values come from internal/buildinfo.
func (m *Metrics) SetBuildInfo(version, commit, goVersion string) {
	if m == nil {
		return
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "mcpgw_build_info",
		Help:        "Always 1; the labels say which build of the gateway this instance runs.",
		ConstLabels: prometheus.Labels{"version": version, "commit": commit, "goversion": goVersion},
	})
	g.Set(1)
	m.reg.MustRegister(g)
}
