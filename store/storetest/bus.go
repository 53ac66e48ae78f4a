package storetest

// The contract of the store's bus, as every backend must keep it.

import (
	"testing"

	"github.com/mcpgw/gateway/store"
)

func busSubscriberGetsItsOwnCopy(t *testing.T, s store.Store) {
	MustSubscribe(t, s, func(m store.BusMessage) { m.Data[0] = 'X' }) // a misbehaving callback
	got, _ := collect(t, s)
	data := []byte(`{"a":1}`)
	Publish(t, s, store.BusMessage{Kind: store.BusNotify, Session: "s1", Data: data})
	data[0] = '[' // the publisher reuses its buffer
	if m := Recv(t, got); string(m.Data) != `{"a":1}` {
		t.Errorf("Data = %s, want the published bytes untouched", m.Data)
	}
}
