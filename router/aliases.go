package router

// aliasTarget is where a downstream tool alias routes.
type aliasTarget struct {
	backend string
	tool    string // the backend's own tool name
}

// aliasTable holds a virtual host's tool aliases in both directions.
//
// Aliases are looked up before the prefix splitter, so an alias may look
// like anything ("Public.Tool", even "gateway-one-x"). A tool with an alias
// is advertised under the alias only, exactly as written, but stays callable
// by its prefixed name: clients that cached the old name keep working.
type aliasTable struct {
	byAlias map[string]aliasTarget
	// byTool maps backend key -> backend tool name -> alias, for tools/list.
	byTool map[string]map[string]string
}

func newAliasTable(backends map[string]*Backend) *aliasTable {
	t := &aliasTable{byAlias: map[string]aliasTarget{}, byTool: map[string]map[string]string{}}
	for key, b := range backends {
		for alias, tool := range b.ToolNameAliases {
			t.byAlias[alias] = aliasTarget{backend: key, tool: tool}
			if t.byTool[key] == nil {
				t.byTool[key] = map[string]string{}
			}
			t.byTool[key][tool] = alias
		}
	}
	return t
}

func (t *aliasTable) resolve(name string) (aliasTarget, bool) {
	a, ok := t.byAlias[name]
	return a, ok
}

// advertised returns the alias for a backend's tool, if it has one.
func (t *aliasTable) advertised(backend, tool string) (string, bool) {
	a, ok := t.byTool[backend][tool]
	return a, ok
}
