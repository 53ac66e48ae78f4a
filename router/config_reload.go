package router

import "reflect"

// Reload swaps in a new set of virtual hosts. Requests already running
// finish on the old table; new ones use the new. It returns the names of
// the vhosts whose backends or access rules changed, for the session
// runtime to tell their GET streams (session.Runtime.VHostsChanged: tools,
// resources and prompts list_changed, since the gateway's lists may have
// changed even if no backend's did, and rebuilt listeners).
//
// Each instance reloads its own config, so each notifies the streams it
// holds; no cross-instance traffic is needed.
func (r *Router) Reload(vhosts map[string]*VirtualHost) []string {
	prev := r.table.Load()
	next := buildRoutingTable(vhosts, prev, r.clientOptions()...)
	prev = r.table.Swap(next)
	changed := map[string]bool{}
	var names []string
	for name, v := range next.vhosts {
		if old, ok := prev.vhosts[name]; !ok || !reflect.DeepEqual(old.backends, v.backends) || !old.access.Equal(v.access) {
			changed[name] = true
			names = append(names, name)
		}
	}
	for name := range prev.vhosts {
		if _, ok := next.vhosts[name]; !ok {
			changed[name] = true
			names = append(names, name)
		}
	}
	// In the background: a stdio backend's pool waits for the requests
	// still using its processes (Router.Close waits for it).
	r.cleanup.Go(func() { prev.closeExcept(next) })
	return names
}
