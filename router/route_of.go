package router

// RouteOf names the backend that a routed request (tools/call,
// resources/read, prompts/get, …) for the published identifier id goes to
// on vhost: aliases first for tools/call, then the prefix rule. It is ""
// when the method is not routed, the identifier unknown or the vhost not
// configured. It reads only the routing table, for the request log: no
// access rule is evaluated and no backend is contacted.
func (r *Router) RouteOf(vhost, method, id string) string {
	v := r.table.Load().vhosts[vhost]
	kind, routed := routedKind(method)
	if v == nil || !routed || id == "" {
		return ""
	}
	if method == "tools/call" {
		if a, ok := v.aliases.Resolve(id); ok {
			return a.Backend
		}
	}
	backend, _, err := v.route(kind, id)
	if err != nil {
		return ""
	}
	return backend
}
