package testsupport

import dto "github.com/prometheus/client_model/go"

// MetricValue finds the series of family name whose labels are exactly
// want and returns a counter's or gauge's value, or a histogram's count.
// ok is false when no such series exists.
func MetricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (v float64, ok bool) {
next:
	for _, mt := range fams[name].GetMetric() {
		if len(mt.GetLabel()) != len(want) {
			continue
		}
		for _, lp := range mt.GetLabel() {
			if v, ok := want[lp.GetName()]; !ok || v != lp.GetValue() {
				continue next
			}
		}
		switch {
		case mt.Counter != nil:
			return mt.GetCounter().GetValue(), true
		case mt.Gauge != nil:
			return mt.GetGauge().GetValue(), true
		case mt.Histogram != nil:
			return float64(mt.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}
