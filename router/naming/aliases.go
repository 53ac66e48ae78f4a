package naming

// AliasTarget is where a downstream tool alias routes.
type AliasTarget struct {
	Backend string
	Tool    string // the backend's own tool name
}

// Aliases holds a virtual host's tool aliases in both directions.
//
// Aliases are looked up before the prefix Splitter, so an alias may look
// like anything ("Public.Tool", even "gateway-one-x"). A tool with an alias
// is advertised under the alias only, exactly as written, but stays callable
// by its prefixed name: clients that cached the old name keep working.
type Aliases struct {
	byAlias map[string]AliasTarget
	// byTool maps backend key -> backend tool name -> alias, for tools/list.
	byTool map[string]map[string]string
}

// NewAliases builds the table from each backend's aliases (backend key ->
// alias -> the backend's tool name).
func NewAliases(byBackend map[string]map[string]string) *Aliases {
	t := &Aliases{byAlias: map[string]AliasTarget{}, byTool: map[string]map[string]string{}}
	for key, aliases := range byBackend {
		for alias, tool := range aliases {
			t.byAlias[alias] = AliasTarget{Backend: key, Tool: tool}
			if t.byTool[key] == nil {
				t.byTool[key] = map[string]string{}
			}
			t.byTool[key][tool] = alias
		}
	}
	return t
}

// Resolve returns where an alias routes.
func (t *Aliases) Resolve(name string) (AliasTarget, bool) {
	a, ok := t.byAlias[name]
	return a, ok
}

// Advertised returns the alias for a backend's tool, if it has one.
func (t *Aliases) Advertised(backend, tool string) (string, bool) {
	a, ok := t.byTool[backend][tool]
	return a, ok
}

// Of returns the aliases of a backend's tools (tool -> alias); nil if it
// has none. The map is the table's: read it, never write it.
func (t *Aliases) Of(backend string) map[string]string { return t.byTool[backend] }
