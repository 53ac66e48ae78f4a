package metrics

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// seriesKey names one combination of HTTP metric labels.
type seriesKey struct {
	vhost, method, rpc string
	code               int
}

// httpSeries is the counter and histogram child of one label combination.
type httpSeries struct {
	count prometheus.Counter
	dur   prometheus.Observer
}

// seriesCache resolves label values to metric children once. The request
// path then does one lock-free map lookup instead of two label hashes
// under the vectors' locks and a status-code string allocation. The map is
// copied on write: label sets are bounded, so writes stop early.
type seriesCache struct {
	m     *Metrics
	mu    sync.Mutex // serializes writers
	byKey atomic.Pointer[map[seriesKey]*httpSeries]
}

func (c *seriesCache) init(m *Metrics) {
	c.m = m
	empty := map[seriesKey]*httpSeries{}
	c.byKey.Store(&empty)
}

func (c *seriesCache) get(k seriesKey) *httpSeries {
	if s, ok := (*c.byKey.Load())[k]; ok {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.byKey.Load()
	if s, ok := old[k]; ok {
		return s
	}
	s := &httpSeries{
		count: c.m.requests.WithLabelValues(k.vhost, k.method, k.rpc, strconv.Itoa(k.code)),
		dur:   c.m.duration.WithLabelValues(k.vhost, k.method, k.rpc),
	}
	next := make(map[seriesKey]*httpSeries, len(old)+1)
	for key, v := range old {
		next[key] = v
	}
	next[k] = s
	c.byKey.Store(&next)
	return s
}
