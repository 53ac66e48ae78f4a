package toolsearch

// What an index costs as lists grow: its build time and the memory it
// holds, per tool, at about 400 and 5,000 tools (the evaluation set's
// real tools, repeated under new names), and a search over it. make bench
// (scripts/bench.sh) runs these and reports the 5,000-tool figures as
// ratios of the 400-tool ones: linear growth is a ratio near 1.

import (
	"fmt"
	"runtime"
	"testing"
)

// benchDocs are n tools: the evaluation set's, repeated with a copy
// number in each name and description (so terms grow too, as they do
// when more servers join).
func benchDocs(b *testing.B, n int) []Doc { return benchDocsT(b, n) }

func benchDocsT(b testing.TB, n int) []Doc {
	b.Helper()
	tools, _ := loadEvaluation(b)
	var all []Doc
	for _, list := range tools {
		for _, tl := range list {
			all = append(all, tl.doc)
		}
	}
	out := make([]Doc, n)
	for i := range out {
		d := all[i%len(all)]
		if copyNo := i / len(all); copyNo > 0 {
			d.Name = fmt.Sprintf("%s_v%d", d.Name, copyNo)
			d.Description = fmt.Sprintf("%s (edition %d)", d.Description, copyNo)
			d.Backend = fmt.Sprintf("%s%d", d.Backend, copyNo)
		}
		out[i] = d
	}
	return out
}

var benchSizes = []int{400, 5000}

// BenchmarkIndex reports the build time (ns/tool) and the heap the built
// segment holds (B/tool).
func BenchmarkIndex(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			docs := benchDocs(b, n)
			r := NewBM25F()
			var held uint64
			var ms runtime.MemStats
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				before := ms.HeapAlloc
				b.StartTimer()
				seg := r.Index(docs)
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				held += ms.HeapAlloc - min(before, ms.HeapAlloc)
				runtime.KeepAlive(seg)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/tool")
			b.ReportMetric(float64(held)/float64(b.N)/float64(n), "B/tool")
		})
	}
}

// BenchmarkRank is one search of an intent over the index.
func BenchmarkRank(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			r := NewBM25F()
			parts := []Part{{Seg: r.Index(benchDocs(b, n))}}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if len(r.Rank("search the open issues of a project", parts, 10)) == 0 {
					b.Fatal("nothing found")
				}
			}
		})
	}
}
