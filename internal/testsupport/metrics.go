package testsupport

import (
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

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

// ScrapeMetrics reads GET /metrics of the gateway at base (http://host:port)
// in the Prometheus text format.
func ScrapeMetrics(t testing.TB, base string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(strings.TrimRight(base, "/") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", res.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("GET /metrics is not the text format: %v", err)
	}
	return fams
}

// MetricSum adds up the values of every series of family name whose labels
// include want (counters and gauges; a histogram's count).
func MetricSum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
next:
	for _, mt := range fams[name].GetMetric() {
		for k, v := range want {
			found := false
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == k && lp.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case mt.Counter != nil:
			sum += mt.GetCounter().GetValue()
		case mt.Gauge != nil:
			sum += mt.GetGauge().GetValue()
		case mt.Histogram != nil:
			sum += float64(mt.GetHistogram().GetSampleCount())
		}
	}
	return sum
}
