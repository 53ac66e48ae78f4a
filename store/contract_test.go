package store_test

// The store contract (store/storetest) on each backend: the memory store,
// Redis on one server, and Redis on a three-node cluster. Each contract
// test gets a fresh store; a Redis one starts from an emptied deployment.

import (
	"testing"

	"github.com/mcpgw/gateway/store"
	"github.com/mcpgw/gateway/store/storetest"
)

func TestContract(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			m := store.NewMemory()
			t.Cleanup(func() { m.Close() })
			return m
		})
	})
	t.Run("redis", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			useTarget(t, singleTarget())
			return newRedis(t)
		})
	})
	t.Run("cluster", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			useCluster(t)
			return newRedis(t)
		})
	})
}
