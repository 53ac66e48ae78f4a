package router

import (
	"slices"

	"github.com/mcpgw/gateway/internal/servercard"
)

// Server Cards (SEP-2127) are documents the handler serves; the router
// only keeps each vhost's card settings in the routing table, so that the
// vhosts a catalog lists are the ones routed, reloads included.

// CardOf is vhost's card settings (nil: the defaults); ok is false when
// the vhost is not configured or publishes no card.
func (r *Router) CardOf(vhost string) (card *servercard.Config, ok bool) {
	v, found := r.table.Load().vhosts[vhost]
	if !found || v.card != nil && v.card.Off {
		return nil, false
	}
	return v.card, true
}

// CardVHosts are the vhosts that publish a card, sorted, with their
// settings (nil: the defaults), from one routing table.
func (r *Router) CardVHosts() (names []string, cards []*servercard.Config) {
	t := r.table.Load()
	for name, v := range t.vhosts {
		if v.card == nil || !v.card.Off {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		cards = append(cards, t.vhosts[name].card)
	}
	return names, cards
}
