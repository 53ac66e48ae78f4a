package storetest

// The contract of the store's lifecycle, as every backend must keep it.

import (
	"context"
	"testing"

	"github.com/mcpgw/gateway/store"
)

func storePingAndCloseTwice(t *testing.T, s store.Store) {
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
