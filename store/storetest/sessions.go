package storetest

// The contract of the store's sessions, as every backend must keep it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

func sessionsCreateThenLoadRoundTrips(t *testing.T, s store.Store) {
	want := SampleSession("s1")
	Create(t, s, want, time.Minute)
	if got := Load(t, s, "s1"); !reflect.DeepEqual(got, want) {
		t.Errorf("loaded\n%+v\nwant\n%+v", got, want)
	}
}

func sessionsCallersCannotAliasStoredData(t *testing.T, s store.Store) {
	in := SampleSession("s1")
	Create(t, s, in, time.Minute)
	in.ClientInfo[2] = 'X'
	in.Backends["github"].Capabilities[2] = 'X'
	in.Subscriptions[0] = "changed"
	in.Cancelled["42"] = true
	in.Pending["gw-0"] = "changed"

	out := Load(t, s, "s1")
	out.ClientCapabilities[2] = 'X'
	out.Backends["github"].ServerInfo[2] = 'X'
	out.Backends["new"] = &store.BackendSnapshot{Key: "new"}
	out.Cancelled["43"] = true
	out.Pending["gw-1"] = "x"

	if got, want := Load(t, s, "s1"), SampleSession("s1"); !reflect.DeepEqual(got, want) {
		t.Errorf("stored session changed through an alias:\n%+v\nwant\n%+v", got, want)
	}
}

func sessionsPutBackendsReplacesOnlyTheGivenBackends(t *testing.T, s store.Store) {
	want := SampleSession("s1")
	Create(t, s, want, time.Minute)
	github := &store.BackendSnapshot{Key: "github", Error: "timeout", ProbedAt: want.CreatedAt.Add(time.Second)}
	extra := &store.BackendSnapshot{Key: "extra", Stateless: true, ProbedAt: want.CreatedAt}
	if err := s.PutBackends(context.Background(), "s1", []*store.BackendSnapshot{github, extra}, time.Minute); err != nil {
		t.Fatal(err)
	}
	want.Backends["github"], want.Backends["extra"] = github, extra
	if got := Load(t, s, "s1"); !reflect.DeepEqual(got, want) {
		t.Errorf("loaded\n%+v\nwant\n%+v", got, want)
	}
}

func sessionsSetLogLevelKeepsTheRestOfTheSession(t *testing.T, s store.Store) {
	want := SampleSession("s1")
	Create(t, s, want, time.Minute)
	if err := s.SetLogLevel(context.Background(), "s1", "debug", time.Minute); err != nil {
		t.Fatal(err)
	}
	want.LogLevel = "debug"
	if got := Load(t, s, "s1"); !reflect.DeepEqual(got, want) {
		t.Errorf("loaded\n%+v\nwant\n%+v", got, want)
	}
}

func sessionsSubscriptionsRoundTrip(t *testing.T, s store.Store) {
	ctx := context.Background()
	sess := SampleSession("s1")
	sess.Subscriptions = []string{"file:///a"}
	Create(t, s, sess, time.Minute)
	steps := []error{
		s.AddSubscription(ctx, "s1", "b://x", time.Minute),
		s.AddSubscription(ctx, "s1", "b://x", time.Minute), // idempotent
		s.AddSubscription(ctx, "s1", "c://y:with:colons", time.Minute),
		s.RemoveSubscription(ctx, "s1", "file:///a", time.Minute),
		s.RemoveSubscription(ctx, "s1", "never-added", time.Minute),
	}
	for i, err := range steps {
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := []string{"b://x", "c://y:with:colons"}
	if got := Load(t, s, "s1").Subscriptions; !reflect.DeepEqual(got, want) {
		t.Errorf("subscriptions = %q, want %q", got, want)
	}
}

func sessionsSubscriptionsBoundedPerSession(t *testing.T, s store.Store) {
	ctx := context.Background()
	sess := SampleSession("s1")
	sess.Subscriptions = nil
	Create(t, s, sess, time.Minute)
	var want []string
	for i := range store.MaxSubscriptions {
		uri := fmt.Sprintf("file:///%03d", i)
		if err := s.AddSubscription(ctx, "s1", uri, time.Minute); err != nil {
			t.Fatalf("subscription %d: %v", i, err)
		}
		want = append(want, uri)
	}
	for name, uri := range map[string]string{
		"one too many": "file:///new",
		"URI too long": "file:///" + strings.Repeat("x", store.MaxSubscriptionURIBytes),
	} {
		if err := s.AddSubscription(ctx, "s1", uri, time.Minute); !errors.Is(err, store.ErrLimit) {
			t.Errorf("%s: err = %v, want ErrLimit", name, err)
		}
	}
	if err := s.AddSubscription(ctx, "s1", want[0], time.Minute); err != nil {
		t.Errorf("subscribing again at the limit: %v", err)
	}
	if got := Load(t, s, "s1").Subscriptions; !reflect.DeepEqual(got, want) {
		t.Errorf("subscriptions changed by refused writes: %d of them", len(got))
	}
	if err := s.RemoveSubscription(ctx, "s1", want[0], time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.AddSubscription(ctx, "s1", "file:///new", time.Minute); err != nil {
		t.Errorf("subscribing after an unsubscribe made room: %v", err)
	}
	if err := s.RemoveSubscription(ctx, "s1", "file:///new", time.Minute); err != nil {
		t.Fatal(err)
	}
	atLimit := "file:///" + strings.Repeat("x", store.MaxSubscriptionURIBytes-len("file:///"))
	if err := s.AddSubscription(ctx, "s1", atLimit, time.Minute); err != nil {
		t.Errorf("a URI of exactly %d bytes: %v", store.MaxSubscriptionURIBytes, err)
	}
}

func sessionsClientMetadataBounded(t *testing.T, s store.Store) {
	sess := SampleSession("s1")
	sess.ClientCapabilities = json.RawMessage(`{"experimental":{"x":"` + strings.Repeat("a", store.MaxClientMetadataBytes) + `"}}`)
	if err := s.CreateSession(context.Background(), sess, time.Minute); !errors.Is(err, store.ErrLimit) {
		t.Fatalf("CreateSession: err = %v, want ErrLimit", err)
	}
	if _, err := s.LoadSession(context.Background(), "s1", time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("LoadSession after a refused create: err = %v, want ErrNotFound", err)
	}
}

func sessionsCreateRejectsTTLBelowOneMillisecond(t *testing.T, s store.Store) {
	if err := s.CreateSession(context.Background(), SampleSession("s1"), 0); err == nil {
		t.Error("CreateSession with ttl 0 succeeded")
	}
}
