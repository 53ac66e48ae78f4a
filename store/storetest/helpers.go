package storetest

// Helpers the contract tests share.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/store"
)

// busWait bounds every wait for a bus message. It is a failure timeout,
// not a synchronisation delay: tests proceed as soon as the message lands.
const busWait = 5 * time.Second

// collect subscribes a callback that forwards every message s itself
// published to a channel. A suite test has one store: a message from
// another instance is a leftover of an earlier test on a shared server
// (on a Redis Cluster a PUBLISH reaches the other nodes after its test).
func collect(t *testing.T, s store.Store) (<-chan store.BusMessage, func()) {
	t.Helper()
	ch := make(chan store.BusMessage, 64)
	self := s.InstanceID()
	stop := MustSubscribe(t, s, func(m store.BusMessage) {
		if m.From == self {
			ch <- m
		}
	})
	t.Cleanup(stop)
	return ch, stop
}

func SampleSession(id store.SessionID) *store.Session {
	at := time.Date(2025, 3, 4, 5, 6, 7, 8, time.UTC)
	return &store.Session{
		ID: id, Principal: "alice", VHost: "mcp.example.com", ProtocolVersion: "2025-06-18",
		ClientInfo:         json.RawMessage(`{"name":"cli","version":"1.0"}`),
		ClientCapabilities: json.RawMessage(`{"roots":{"listChanged":true},"list":[]}`),
		LogLevel:           "info",
		CreatedAt:          at,
		Backends: map[string]*store.BackendSnapshot{
			"github": {Key: "github", ProbedAt: at, ProtocolVersion: "2025-06-18",
				Capabilities: json.RawMessage(`{"tools":{}}`), ServerInfo: json.RawMessage(`{"name":"gh"}`),
				Instructions: "be nice", SessionID: "up-1"},
			"down": {Key: "down", ProbedAt: at, Error: "connection refused", Stateless: true},
		},
		Subscriptions: []string{"file:///a", "gh://repo/b"},
		Cancelled:     map[string]bool{"41": true},
		Pending:       map[store.ServerRequestID]string{"gw-0": "0123456789abcdef"},
	}
}

func Create(t *testing.T, s store.Store, sess *store.Session, ttl time.Duration) {
	t.Helper()
	if err := s.CreateSession(context.Background(), sess, ttl); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
}

// MustSubscribe subscribes fn to s's bus, failing the test if the store
// does not confirm the subscription.
func MustSubscribe(t testing.TB, s store.Bus, fn func(store.BusMessage)) (stop func()) {
	t.Helper()
	stop, err := s.Subscribe(t.Context(), fn)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	return stop
}

func Recv(t *testing.T, ch <-chan store.BusMessage) store.BusMessage {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(busWait):
		t.Fatal("no bus message within", busWait)
		return store.BusMessage{}
	}
}

func Publish(t *testing.T, s store.Store, msg store.BusMessage) {
	t.Helper()
	if err := s.Publish(context.Background(), msg); err != nil {
		t.Fatalf("Publish: %v", err)
	}
}

// released drains the due entries of the index and returns the ids of
// vhost's (other tests' entries may be due too), sorted. Those still kept
// are not due again for an hour.
func released(t *testing.T, s store.Store, vhost string) []store.BackendSessionID {
	t.Helper()
	var ids []store.BackendSessionID
	for {
		got, err := s.ReleasedBackendSessions(context.Background(), 2, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range got {
			if k.VHost == vhost {
				ids = append(ids, k.ID)
			}
		}
		if len(got) == 0 {
			// Nothing released in this batch: any left due are kept ones
			// rescheduled an hour ahead, so the index holds nothing due.
			more, _ := s.ReleasedBackendSessions(context.Background(), 100, time.Hour)
			for _, k := range more {
				if k.VHost == vhost {
					ids = append(ids, k.ID)
				}
			}
			if len(more) == 0 {
				break
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// AppendEvents appends n events with data e1..en and returns their ids.
func AppendEvents(t *testing.T, s store.Store, id store.SessionID, n, maxLen int) []store.EventID {
	t.Helper()
	ids := make([]store.EventID, n)
	for i := range n {
		var err error
		ids[i], err = s.AppendEvent(context.Background(), id, fmt.Appendf(nil, "e%d", i+1), maxLen, time.Minute)
		if err != nil {
			t.Fatalf("AppendEvent %d: %v", i+1, err)
		}
	}
	return ids
}

func EventsAfter(t *testing.T, s store.Store, id store.SessionID, after store.EventID, limit int) []store.Event {
	t.Helper()
	evs, err := s.EventsAfter(context.Background(), id, after, limit)
	if err != nil {
		t.Fatalf("EventsAfter(%q, %d): %v", after, limit, err)
	}
	return evs
}

// bump returns the event id right after id.
func bump(t *testing.T, id store.EventID) store.EventID {
	t.Helper()
	ms, seq, _ := strings.Cut(string(id), "-")
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		t.Fatalf("event id %q: %v", id, err)
	}
	return store.EventID(ms + "-" + strconv.FormatUint(n+1, 10))
}

func CallEvents(t *testing.T, s store.Store, stream store.CallStreamID, after store.EventID) (*store.CallStream, []store.Event) {
	t.Helper()
	cs, evs, err := s.CallStreamEventsAfter(context.Background(), "s1", stream, after, 0)
	if err != nil {
		t.Fatalf("CallStreamEventsAfter(%s, %s): %v", stream, after, err)
	}
	return cs, evs
}

func Load(t *testing.T, s store.Store, id store.SessionID) *store.Session {
	t.Helper()
	got, err := s.LoadSession(context.Background(), id, time.Hour)
	if err != nil {
		t.Fatalf("LoadSession(%q): %v", id, err)
	}
	return got
}

func MustCreateTask(t *testing.T, s store.Store, task *store.Task, limit int) {
	t.Helper()
	if err := s.CreateTask(context.Background(), task, Running(limit), time.Minute, time.Hour); err != nil {
		t.Fatalf("CreateTask(%s): %v", task.ID, err)
	}
}

// Running is a bound on running tasks only.
func Running(n int) store.TaskLimits { return store.TaskLimits{Running: n} }

func LoadTask(t *testing.T, s store.Store, owner, id string) *store.Task {
	t.Helper()
	got, err := s.LoadTask(context.Background(), owner, id)
	if err != nil {
		t.Fatalf("LoadTask(%s): %v", id, err)
	}
	return got
}

func SampleTask(owner, id, runner string) *store.Task {
	at := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	return &store.Task{ID: id, Owner: owner, VHost: "demo", Backend: "fx", Tool: "slow_compute",
		Status: store.TaskWorking, CreatedAt: at, UpdatedAt: at, TTL: time.Hour, PollInterval: time.Second, Runner: runner}
}

func manyInputs() *store.Task {
	t := SampleTask("o", "x", "r")
	t.InputRequests = map[string]json.RawMessage{}
	for i := range store.MaxTaskInputs + 1 {
		t.InputRequests[fmt.Sprint("k", i)] = json.RawMessage(`{}`)
	}
	return t
}
