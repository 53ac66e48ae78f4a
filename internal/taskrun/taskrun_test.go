package taskrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/taskrun"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/store"
	"go.uber.org/goleak"
)

var redisSrv *testsupport.RedisServer

func TestMain(m *testing.M) {
	if testsupport.Short() {
		fmt.Println("skipped under -short: the runner runs on a Redis server it starts")
		os.Exit(0)
	}
	redisSrv = testsupport.MustStartRedis()
	code := m.Run()
	redisSrv.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines left running: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// instance is one gateway instance: its own store handle and runner.
func instance(t *testing.T, s store.Store, lease time.Duration) *taskrun.Runner {
	t.Helper()
	r, err := taskrun.New(taskrun.Options{Store: s, Lease: lease, PerPrincipal: 2, PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Subscribe(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

func redisStore(t *testing.T) *store.Redis {
	t.Helper()
	s, err := store.NewRedis(redisSrv.URL(), store.RedisOptions{KeyPrefix: "taskrun" + fmt.Sprint(time.Now().UnixNano())})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// twoInstances returns two runners on one Redis (one prefix, two handles).
func twoInstances(t *testing.T, lease time.Duration) (a, b *taskrun.Runner, sa *store.Redis) {
	t.Helper()
	sa, sb := twoStores(t)
	return instance(t, sa, lease), instance(t, sb, lease), sa
}

var spec = taskrun.Spec{Owner: "owner-digest", VHost: "demo", Backend: "fx", Tool: "slow_compute", TTL: time.Minute}

func await(t *testing.T, r *taskrun.Runner, id string, cond func(*store.Task) bool) *store.Task {
	t.Helper()
	var last *store.Task
	var err error
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		last, err = r.Get(t.Context(), spec.Owner, id)
		return err == nil && cond(last)
	}) {
		t.Fatalf("task %s: condition never held; last %+v (%v)", id, last, err)
	}
	return last
}

func status(s string) func(*store.Task) bool {
	return func(t *store.Task) bool { return t.Status == s }
}

func TestARunCompletesAndAnyInstanceSeesIt(t *testing.T) {
	a, b, _ := twoInstances(t, time.Second)
	release := make(chan struct{})
	task, err := a.Start(t.Context(), spec, func(ctx context.Context, answers map[string]json.RawMessage) (taskrun.Outcome, error) {
		<-release
		return taskrun.Outcome{Result: json.RawMessage(`{"content":[{"type":"text","text":"done"}],"isError":false}`)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Get(t.Context(), spec.Owner, task.ID) // durable before Start returned
	if err != nil || got.Status != store.TaskWorking {
		t.Fatalf("right after Start, on the other instance: %+v, %v", got, err)
	}
	created := taskrun.Created(task, "sealed", time.Now())
	if created["resultType"] != "task" || created["taskId"] != "sealed" || created["ttlMs"].(int64) < time.Minute.Milliseconds() {
		t.Fatalf("CreateTaskResult %v", created)
	}
	close(release)
	got = await(t, b, task.ID, status(store.TaskCompleted))
	d := taskrun.Detailed(got, "sealed", time.Now())
	if string(d["result"].(json.RawMessage)) != `{"content":[{"type":"text","text":"done"}],"isError":false}` || d["error"] != nil {
		t.Fatalf("DetailedTask %v", d)
	}
}

func TestRoundsAnsweredFromTheOtherInstance(t *testing.T) {
	a, b, sa := twoInstances(t, time.Second)
	changes := statusChanges(t, sa, spec.Owner)
	got := make(chan map[string]json.RawMessage, 1)
	task, err := a.Start(t.Context(), spec, func(ctx context.Context, answers map[string]json.RawMessage) (taskrun.Outcome, error) {
		if answers == nil {
			return taskrun.Outcome{InputRequests: map[string]json.RawMessage{
				"name": json.RawMessage(`{"method":"elicitation/create","params":{"message":"name?"}}`),
				"ok":   json.RawMessage(`{"method":"elicitation/create","params":{"message":"ok?"}}`),
			}}, nil
		}
		got <- answers
		return taskrun.Outcome{Result: json.RawMessage(`{"content":[]}`)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	asking := await(t, b, task.ID, status(store.TaskInputRequired))
	<-changes // the round was announced to every instance
	reqs := taskrun.Detailed(asking, "x", time.Now())["inputRequests"].(map[string]json.RawMessage)
	if len(reqs) != 2 || reqs["r1-name"] == nil || reqs["r1-ok"] == nil {
		t.Fatalf("inputRequests %v, want the backend's two keys, prefixed by the round", reqs)
	}
	if err := b.Update(t.Context(), spec.Owner, task.ID, map[string]json.RawMessage{"r1-name": json.RawMessage(`"Ada"`), "bogus": json.RawMessage(`1`)}); err != nil {
		t.Fatal(err)
	}
	partial, _ := b.Get(t.Context(), spec.Owner, task.ID)
	if out := partial.Outstanding(); partial.Status != store.TaskInputRequired || len(out) != 1 || out["r1-ok"] == nil {
		t.Fatalf("after a partial answer: %s, outstanding %v", partial.Status, out)
	}
	if err := b.Update(t.Context(), spec.Owner, task.ID, map[string]json.RawMessage{"r1-ok": json.RawMessage(`true`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case answers := <-got:
		if string(answers["name"]) != `"Ada"` || string(answers["ok"]) != "true" || len(answers) != 2 {
			t.Fatalf("the backend got %v, want its own keys", answers)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run never got the answers")
	}
	await(t, b, task.ID, status(store.TaskCompleted))
	for _, want := range []string{"round complete", "settled"} {
		select {
		case id := <-changes:
			if id != task.ID {
				t.Fatalf("announced %s, want %s", id, task.ID)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no status announcement: %s", want)
		}
	}
	if err := b.Update(t.Context(), spec.Owner, "no-such-task", nil); !errors.Is(err, taskrun.ErrUnknown) {
		t.Fatalf("answers to an unknown task: %v", err)
	}
}

func TestCancelFromTheOtherInstanceStopsTheStep(t *testing.T) {
	a, b, _ := twoInstances(t, time.Second)
	stopped := make(chan error, 1)
	task, err := a.Start(t.Context(), spec, func(ctx context.Context, _ map[string]json.RawMessage) (taskrun.Outcome, error) {
		<-ctx.Done()
		stopped <- ctx.Err()
		return taskrun.Outcome{}, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Cancel(t.Context(), spec.Owner, task.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the backend call was not stopped")
	}
	await(t, b, task.ID, status(store.TaskCancelled))
	if err := b.Cancel(t.Context(), spec.Owner, task.ID); err != nil {
		t.Fatalf("cancelling a cancelled task: %v, want the same ack", err)
	}
}

func TestADeadInstancesTaskFailsNamingWhy(t *testing.T) {
	a, b, sa := twoInstances(t, 300*time.Millisecond)
	task, err := a.Start(t.Context(), spec, func(ctx context.Context, _ map[string]json.RawMessage) (taskrun.Outcome, error) {
		<-ctx.Done()
		return taskrun.Outcome{}, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	// Instance A dies: its store handle goes, so its lease is never renewed
	// and it can write nothing more.
	sa.Close()
	got := await(t, b, task.ID, status(store.TaskFailed))
	if got.StatusMessage != taskrun.LapsedMessage || len(got.Error) == 0 {
		t.Fatalf("a lapsed task: %+v, want failed naming the lapse", got)
	}
	// Its place under the owner's bound is free again.
	for range 2 {
		if _, err := b.Start(t.Context(), spec, func(context.Context, map[string]json.RawMessage) (taskrun.Outcome, error) {
			return taskrun.Outcome{Result: json.RawMessage(`{}`)}, nil
		}); err != nil {
			t.Fatalf("starting after the lapse: %v", err)
		}
	}
}

func TestOutcomesAndTheOwnersBound(t *testing.T) {
	for name, s := range map[string]store.Store{"memory": store.NewMemory(), "redis": redisStore(t)} {
		t.Run(name, func(t *testing.T) {
			if m, ok := s.(*store.Memory); ok {
				t.Cleanup(func() { m.Close() })
			}
			r := instance(t, s, time.Second)
			block := make(chan struct{})
			defer close(block)
			hold := func(ctx context.Context, _ map[string]json.RawMessage) (taskrun.Outcome, error) {
				select {
				case <-block:
				case <-ctx.Done():
				}
				return taskrun.Outcome{Result: json.RawMessage(`{}`)}, nil
			}
			if _, err := r.Start(t.Context(), spec, hold); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Start(t.Context(), spec, hold); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Start(t.Context(), spec, hold); !errors.Is(err, taskrun.ErrLimit) {
				t.Fatalf("a third running task: %v, want ErrLimit", err)
			}
			other := spec
			other.Owner = "someone-else"
			protocol, err := r.Start(t.Context(), other, func(context.Context, map[string]json.RawMessage) (taskrun.Outcome, error) {
				return taskrun.Outcome{}, &taskrun.RPCError{Code: -32603, Message: "backend broke"}
			})
			if err != nil {
				t.Fatalf("another owner's task: %v", err)
			}
			got := awaitOwner(t, r, other.Owner, protocol.ID, status(store.TaskFailed))
			var e taskrun.RPCError
			if json.Unmarshal(got.Error, &e) != nil || e.Code != -32603 || e.Message != "backend broke" || got.Result != nil {
				t.Fatalf("a protocol error: %+v", got)
			}
			if _, err := r.Get(t.Context(), spec.Owner, protocol.ID); !errors.Is(err, taskrun.ErrUnknown) {
				t.Fatalf("another owner's task under spec's owner: %v, want ErrUnknown", err)
			}
		})
	}
}

// statusChanges collects the ids of owner's tasks announced on s's bus.
func statusChanges(t *testing.T, s store.Store, owner string) <-chan string {
	t.Helper()
	ch := make(chan string, 16)
	stop, err := s.Subscribe(t.Context(), func(m store.BusMessage) {
		if o, id, ok := taskrun.StatusChanged(m); ok && o == owner {
			select {
			case ch <- id:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return ch
}

func awaitOwner(t *testing.T, r *taskrun.Runner, owner, id string, cond func(*store.Task) bool) *store.Task {
	t.Helper()
	var last *store.Task
	if !testsupport.Eventually(t, 10*time.Second, func() bool {
		var err error
		last, err = r.Get(t.Context(), owner, id)
		return err == nil && cond(last)
	}) {
		t.Fatalf("task %s never reached the condition; last %+v", id, last)
	}
	return last
}

// A runner that shuts down settles its tasks failed, naming why, and one
// that runs too long fails the same way.
func TestShutdownAndMaxRunFailTheTask(t *testing.T) {
	s := store.NewMemory()
	t.Cleanup(func() { s.Close() })
	hold := func(ctx context.Context, _ map[string]json.RawMessage) (taskrun.Outcome, error) {
		<-ctx.Done()
		return taskrun.Outcome{}, ctx.Err()
	}
	r, err := taskrun.New(taskrun.Options{Store: s, MaxRun: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	long, err := r.Start(t.Context(), spec, hold)
	if err != nil {
		t.Fatal(err)
	}
	if got := await(t, r, long.ID, status(store.TaskFailed)); got.StatusMessage != "the task ran longer than its limit" {
		t.Fatalf("a task past MaxRun: %q", got.StatusMessage)
	}
	r2, err := taskrun.New(taskrun.Options{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	running, err := r2.Start(t.Context(), spec, hold)
	if err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if got, err := r.Get(t.Context(), spec.Owner, running.ID); err != nil || got.Status != store.TaskFailed ||
		got.StatusMessage != "the gateway instance running the task shut down" {
		t.Fatalf("after its runner closed: %+v, %v", got, err)
	}
	if _, err := r2.Start(t.Context(), spec, hold); !errors.Is(err, taskrun.ErrClosed) {
		t.Fatalf("a closed runner's Start: %v, want ErrClosed", err)
	}
	r.Close()
}
