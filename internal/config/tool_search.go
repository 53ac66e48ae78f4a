package config

import (
	"errors"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/policy"
)

// A virtual host of many backends can list more tools than a client holds
// (clients stop at 40 to 128); with tool_search its tools/list shows a
// few tools and a search instead (router/tool_search.go,
// docs/reference/tool-search.md).

// rawToolSearch is a virtual host's `tool_search` block. Present (even
// empty: `tool_search: {}`; a null value is absent, as everywhere in the
// file), the vhost's tools/list answers the `always`
// tools and the gateway's search_tools and call_tool; absent, nothing
// changes.
type rawToolSearch struct {
	// Published tool names ('*' globs, as in access rules) that stay
	// listed; a tool whose _meta says anthropic/alwaysLoad: true stays
	// listed too. Access rules still apply to them.
	Always []string `yaml:"always"`
	// How many tools one search returns when the call does not say (its
	// limit argument); at most router.MaxSearchResults.
	Results *int64 `yaml:"results" jsonschema:"default=10,minimum=1,maximum=50"`
}

// toolSearch checks a virtual host's tool_search block; nil when it is
// absent or wrong (reported).
func (v *validator) toolSearch(vhostPath string, raw *rawToolSearch) *router.ToolSearch {
	if raw == nil {
		return nil
	}
	path := joinPath(vhostPath, "tool_search")
	ts := &router.ToolSearch{Results: router.DefaultSearchResults}
	ok := true
	if raw.Results != nil {
		if n := *raw.Results; n < 1 || n > router.MaxSearchResults {
			v.errf(joinPath(path, "results"), "must be between 1 and %d (the results of one search)", router.MaxSearchResults)
			ok = false
		} else {
			ts.Results = int(n)
		}
	}
	names, err := policy.CompileNames(raw.Always)
	var ne *policy.NamesError
	switch {
	case errors.As(err, &ne):
		v.errf(indexPath(joinPath(path, "always"), ne.Index), "%s", ne.Msg)
		ok = false
	case err != nil:
		v.errf(joinPath(path, "always"), "%s", errMsg(err))
		ok = false
	}
	if !ok {
		return nil
	}
	ts.Always = names
	return ts
}
