package handler

import (
	"encoding/json"
	"html/template"
	"net/http"
	"time"

	"github.com/mcpgw/gateway/router"
)

// GET /status shows an operator what this instance knows of its backends:
// for each virtual host, each backend's protocol generation, its last
// discovery and how old it is, its last answer, its last failure (as a
// client was told it: -32603 naming the backend, never a URL or a header
// value) and its list cache. JSON by default; a small HTML page for a
// client that prefers text/html (a browser). It reads the router's
// in-memory view (router.Status): no store round trip, no lock a request
// holds, so it answers while the store or a backend is down. It is served
// where /metrics is, with the same exposure (Options.Status).

// statusDoc is the JSON document.
type statusDoc struct {
	GeneratedAt time.Time     `json:"generated_at"`
	VHosts      []statusVHost `json:"vhosts"`
}

type statusVHost struct {
	Name     string          `json:"name"`
	Backends []statusBackend `json:"backends"`
	// Patterns is the latest check of the vhost's access and rate limit
	// patterns; absent before the first.
	Patterns *statusPatterns `json:"patterns,omitempty"`
}

// statusPatterns: which configured patterns match nothing the vhost's
// backends publish. Complete is false while a backend could not be
// listed (Unchecked says which and why): nothing is reported then.
type statusPatterns struct {
	CheckedAt statusTime        `json:"checked_at"`
	Complete  bool              `json:"complete"`
	Unchecked []string          `json:"unchecked_backends,omitempty"`
	Unmatched []statusUnmatched `json:"unmatched"`
}

type statusUnmatched struct {
	Field   string `json:"field"`
	Kind    string `json:"kind"`
	Pattern string `json:"pattern"`
}

type statusBackend struct {
	Key       string `json:"key"`
	Transport string `json:"transport"`
	// State: "ok" (its last word was an answer), "failing" (a failure,
	// newer than its last answer) or "unknown" (not yet reached here).
	State           string         `json:"state"`
	Generation      string         `json:"generation,omitempty"`
	ProtocolVersion string         `json:"protocol_version,omitempty"`
	Stateless       bool           `json:"stateless,omitempty"`
	LastDiscovery   *statusTime    `json:"last_discovery,omitempty"`
	LastAnswer      *statusTime    `json:"last_answer,omitempty"`
	LastFailure     *statusFailure `json:"last_failure,omitempty"`
	ListCache       *statusCache   `json:"list_cache,omitempty"`
	Processes       *statusPool    `json:"processes,omitempty"`
}

// statusPool is a stdio backend's processes on this instance.
type statusPool struct {
	Running  int    `json:"running"`
	Idle     int    `json:"idle"`
	Starting int    `json:"starting"`
	Started  uint64 `json:"started"`
	Crashed  uint64 `json:"crashed"`
}

// statusTime is a moment and its age when the document was made.
type statusTime struct {
	At         time.Time `json:"at"`
	AgeSeconds float64   `json:"age_seconds"`
}

type statusFailure struct {
	statusTime
	Op         string `json:"op,omitempty"`
	Outcome    string `json:"outcome"`
	HTTPStatus int    `json:"http_status,omitempty"`
	Code       int64  `json:"code"`
	Message    string `json:"message"`
}

type statusCache struct {
	TTLSeconds  float64     `json:"ttl_seconds"`
	Pages       int64       `json:"pages"`
	Hits        uint64      `json:"hits"`
	Misses      uint64      `json:"misses"`
	LastDropped *statusTime `json:"last_dropped,omitempty"`
}

func (s *server) serveStatus(w http.ResponseWriter, r *http.Request) {
	doc := newStatusDoc(s.opts.Router.Status(), time.Now())
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Vary", "Accept")
	if prefersHTML(r.Header.Values("Accept")) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if err := s.statusPage.Execute(w, doc); err != nil {
			s.log.Warn("writing the status page failed", "error", err)
		}
		return
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(doc)
}

func newStatusDoc(st router.Status, now time.Time) statusDoc {
	doc := statusDoc{GeneratedAt: now.UTC(), VHosts: make([]statusVHost, 0, len(st.VHosts))}
	for _, vh := range st.VHosts {
		sv := statusVHost{Name: vh.Name, Backends: make([]statusBackend, 0, len(vh.Backends))}
		for _, b := range vh.Backends {
			sb := statusBackend{Key: b.Key, Transport: b.Transport, Generation: b.Generation, ProtocolVersion: b.ProtocolVersion,
				Stateless: b.Stateless, LastDiscovery: at(b.DiscoveredAt, now), LastAnswer: at(b.LastAnswer, now)}
			switch {
			case b.Failing():
				sb.State = "failing"
			case b.LastAnswer.IsZero() && b.DiscoveredAt.IsZero():
				sb.State = "unknown"
			default:
				sb.State = "ok"
			}
			if f := b.LastFailure; f != nil {
				sb.LastFailure = &statusFailure{statusTime: *at(f.At, now), Op: f.Op, Outcome: f.Outcome,
					HTTPStatus: f.HTTPStatus, Code: f.Code, Message: f.Message}
			}
			if c := b.ListCache; c != nil {
				sb.ListCache = &statusCache{TTLSeconds: c.TTL.Seconds(), Pages: c.Pages, Hits: c.Hits, Misses: c.Misses,
					LastDropped: at(c.LastDropped, now)}
			}
			if p := b.Pool; p != nil {
				sb.Processes = &statusPool{Running: p.Running, Idle: p.Idle, Starting: p.Starting, Started: p.Started, Crashed: p.Crashed}
			}
			sv.Backends = append(sv.Backends, sb)
		}
		sv.Patterns = newStatusPatterns(vh.Name, vh.Patterns, now)
		doc.VHosts = append(doc.VHosts, sv)
	}
	return doc
}

// newStatusPatterns is a vhost's pattern check as /status shows it; nil
// before the first.
func newStatusPatterns(vhost string, vc *router.VHostCheck, now time.Time) *statusPatterns {
	if vc == nil {
		return nil
	}
	sp := &statusPatterns{CheckedAt: *at(vc.At, now), Complete: vc.Complete, Unchecked: vc.UncheckedBackends(),
		Unmatched: make([]statusUnmatched, 0, len(vc.Unmatched))}
	for _, u := range vc.Unmatched {
		sp.Unmatched = append(sp.Unmatched, statusUnmatched{Field: router.PatternField(vhost, u), Kind: u.Kind, Pattern: u.Pattern})
	}
	return sp
}

// at is t with its age at now, nil for the zero time (never).
func at(t, now time.Time) *statusTime {
	if t.IsZero() {
		return nil
	}
	return &statusTime{At: t.UTC(), AgeSeconds: now.Sub(t).Round(time.Millisecond).Seconds()}
}

// prefersHTML reports whether an Accept header ranks text/html above
// application/json (a browser's does; curl's */* does not).
func prefersHTML(values []string) bool {
	html := acceptance{specificity: -1}
	jsonQ := acceptance{specificity: -1}
	eachMediaRange(values, func(typ, sub string, q float64) {
		html.consider(typ, sub, "text", "html", q)
		jsonQ.consider(typ, sub, "application", "json", q)
	})
	return html.ok() && (!jsonQ.ok() || html.q > jsonQ.q)
}

// age says how long ago a moment was, as an operator reads it (42s ago,
// 3m10s ago, 2h5m0s ago), or "never".
func age(v any) string {
	var t *statusTime
	switch x := v.(type) {
	case *statusTime:
		t = x
	case *statusFailure:
		t = &x.statusTime
	}
	if t == nil {
		return "never"
	}
	d := time.Duration(t.AgeSeconds * float64(time.Second))
	if d >= time.Hour {
		return d.Round(time.Minute).String() + " ago"
	}
	return d.Round(time.Second).String() + " ago"
}

// newStatusPage is the HTML view: one table per virtual host. html/template
// escapes every value (failure messages quote backend text).
func newStatusPage() *template.Template {
	return template.Must(template.New("status").Funcs(template.FuncMap{"age": age}).Parse(statusHTML))
}

const statusHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mcpgw status</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin-bottom:1.5em}
th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.ok{color:#176f2c}.failing{color:#b00020;font-weight:bold}.unknown{color:#777}
small{color:#666}
</style></head><body>
<h1>mcpgw status</h1>
<p><small>This instance's view at {{.GeneratedAt.Format "2006-01-02 15:04:05 UTC"}}. JSON: <code>curl -s /status</code>.</small></p>
{{range .VHosts}}<h2>{{.Name}}</h2>
<table><tr><th>backend</th><th>state</th><th>protocol</th><th>last discovery</th><th>last answer</th><th>last failure</th><th>list cache</th></tr>
{{range .Backends}}<tr><td>{{.Key}}<br><small>{{.Transport}}</small></td>
<td class="{{.State}}">{{.State}}</td>
<td>{{if .ProtocolVersion}}{{.ProtocolVersion}}{{if .Stateless}} <small>stateless</small>{{end}}{{else}}<small>not yet discovered</small>{{end}}</td>
<td>{{age .LastDiscovery}}</td>
<td>{{age .LastAnswer}}{{with .Processes}}<br><small>{{.Running}} processes ({{.Idle}} idle, {{.Starting}} starting), {{.Started}} started, {{.Crashed}} crashed</small>{{end}}</td>
<td>{{with .LastFailure}}{{age .}}{{if .Op}} <small>{{.Op}}</small>{{end}}<br>{{.Code}} {{.Message}}{{else}}none{{end}}</td>
<td>{{with .ListCache}}{{.Pages}} pages, {{.Hits}} hits / {{.Misses}} misses<br><small>ttl {{.TTLSeconds}}s, dropped {{age .LastDropped}}</small>{{else}}<small>off</small>{{end}}</td></tr>
{{end}}</table>
{{with .Patterns}}{{if .Unmatched}}<p class="failing">Patterns that match nothing this virtual host publishes:</p><ul>
{{range .Unmatched}}<li><code>{{.Field}}</code> ({{.Kind}}): <code>{{.Pattern}}</code></li>
{{end}}</ul>{{else if .Complete}}<p><small>Every access and rate limit pattern matches something.</small></p>
{{else}}<p><small>Patterns not checked yet: {{range .Unchecked}}{{.}}; {{end}}</small></p>{{end}}{{end}}
{{end}}</body></html>
`
