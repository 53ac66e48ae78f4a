package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Kinds of rate limit: whose requests one counter counts.
const (
	RatePerPrincipal     = "principal"      // each caller (JWT sub) apart
	RatePerPrincipalTool = "principal_tool" // each caller and tool apart
	RatePerVHost         = "vhost"          // every caller of the vhost together
)

// RateLimit is one limit of a virtual host, as configured.
type RateLimit struct {
	Per string
	// Tools, when set, narrows the limit to tools whose published name
	// matches one of these globs ('*' any run of characters).
	Tools  []string
	Limit  int64
	Window time.Duration
	// Batch > 1 counts the limit locally (allowance.go): each
	// instance takes Batch requests from the shared counter at once. 0
	// or 1: every request is taken from the store (exact).
	Batch int64
}

// RateLimitPolicy is a virtual host's compiled rate limits
// (CompileRateLimits). It is immutable and safe for concurrent use.
type RateLimitPolicy struct {
	limits []Limit
}

// Limit is one compiled limit: as configured, with its counters' names.
type Limit struct {
	RateLimit
	index int
	tools []nameGlob
	// id names the limit's counters: its position and a digest of its
	// definition, so a reload that changes a limit starts it afresh.
	id string
}

// RateLimitError is one problem of one limit. Field is "per", "limit",
// "window", "tools[i]", or "" for the limit as a whole.
type RateLimitError struct {
	Limit int
	Field string
	Msg   string
}

func (e *RateLimitError) Error() string {
	at := "rate_limits[" + strconv.Itoa(e.Limit) + "]"
	if e.Field != "" {
		at += "." + e.Field
	}
	return at + ": " + e.Msg
}

// maxRateWindow bounds a window: counters live as long as it.
const maxRateWindow = 24 * time.Hour

// CompileRateLimits checks a virtual host's limits and compiles their
// globs. The error joins one *RateLimitError per problem.
func CompileRateLimits(limits []RateLimit) (*RateLimitPolicy, error) {
	p := &RateLimitPolicy{}
	var errs []error
	fail := func(i int, field, format string, args ...any) {
		errs = append(errs, &RateLimitError{Limit: i, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	for i, l := range limits {
		switch l.Per {
		case RatePerPrincipal, RatePerPrincipalTool, RatePerVHost:
		case "":
			fail(i, "per", "missing: give principal, principal_tool or vhost")
		default:
			fail(i, "per", "unknown kind %q: give principal, principal_tool or vhost", l.Per)
		}
		if l.Limit < 1 {
			fail(i, "limit", "must be at least 1")
		}
		switch {
		case l.Window < time.Second:
			fail(i, "window", "must be at least 1s")
		case l.Window > maxRateWindow:
			fail(i, "window", "must be at most 24h")
		case l.Limit >= 1 && l.Window.Microseconds()/l.Limit < 1:
			fail(i, "limit", "more than one request per microsecond cannot be counted")
		}
		if l.Batch < 0 || (l.Limit >= 1 && l.Batch > l.Limit) {
			fail(i, "batch", "must be between 1 and the limit (%d)", l.Limit)
		}
		rl := Limit{RateLimit: l, index: i}
		rl.Tools = append([]string(nil), l.Tools...)
		for j, src := range l.Tools {
			g, err := compileGlob(src)
			if err != nil {
				fail(i, "tools["+strconv.Itoa(j)+"]", "%v", err)
			}
			rl.tools = append(rl.tools, g)
		}
		h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%d\x00%d", l.Per, strings.Join(l.Tools, "\x00"), l.Limit, l.Window)))
		rl.id = strconv.Itoa(i) + "-" + hex.EncodeToString(h[:6])
		p.limits = append(p.limits, rl)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// Batched reports whether any limit is counted locally.
func (p *RateLimitPolicy) Batched() bool {
	if p == nil {
		return false
	}
	for _, l := range p.limits {
		if l.Batch > 1 {
			return true
		}
	}
	return false
}

// Limits returns the limits as configured.
func (p *RateLimitPolicy) Limits() []RateLimit {
	if p == nil {
		return nil
	}
	out := make([]RateLimit, len(p.limits))
	for i, l := range p.limits {
		out[i] = l.RateLimit
	}
	return out
}

// Applies reports whether the limit counts a call of the published tool.
func (l *Limit) Applies(tool string) bool {
	return len(l.tools) == 0 || anyMatch(l.tools, tool)
}

// Name is how an answer names the limit.
func (l *Limit) Name() string {
	return fmt.Sprintf("rate_limits[%d] (%s, %d per %v)", l.index, l.Per, l.Limit, l.Window)
}

// Counter is the store key of the limit's counter for a caller and tool.
// Principals and tool names are digested: keys stay short whatever a
// token's sub holds, and the store holds no identities.
func (l *Limit) Counter(principal, tool string) string {
	switch l.Per {
	case RatePerPrincipal:
		return l.id + ":p:" + digest(principal)
	case RatePerPrincipalTool:
		return l.id + ":pt:" + digest(principal+"\x00"+tool)
	}
	return l.id + ":v"
}

func digest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:12])
}

// Index is the limit's place in the vhost's rate_limits.
func (l *Limit) Index() int { return l.index }

// Each calls f with every limit, in order, until f returns false. (An
// iterator of pointers into the policy: nothing is allocated per call.)
func (p *RateLimitPolicy) Each(f func(l *Limit) bool) {
	if p == nil {
		return
	}
	for i := range p.limits {
		if !f(&p.limits[i]) {
			return
		}
	}
}
