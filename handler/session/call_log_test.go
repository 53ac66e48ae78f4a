package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpgw/gateway/handler/session"
	"github.com/mcpgw/gateway/internal/routertest"
	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The instance running a streamed call renews its lease for as long as the
// call runs, however long that is; once it stops (here: Close without an
// answer, as a crash would), a resume ends with an error for the call's
// own request id.
func TestCallLog_LeaseOutlivesItsTTLUntilTheOwnerStops(t *testing.T) {
	// Renewed every third of it: 500 ms leaves a renewal 330 ms of
	// scheduling delay on a loaded machine before it lapses (150 ms,
	// 100 ms, did lapse under -race beside other test binaries).
	const lease = 500 * time.Millisecond
	f := routertest.New(t, redisSrv.URL(), options{Sessions: session.Options{CallLeaseTTL: lease}}, routertest.Spec{Key: "a"})
	sid, _ := f.Initialize(nil)
	ctx := context.Background()
	id, _ := jsonrpc.MakeID("call-1")
	log := f.Sessions.NewCallLog(sid, id)
	sseID, err := log.Append(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	stream, first, ok := session.ParseCallEventID(sseID)
	if !ok {
		t.Fatalf("SSE id %q is not a call stream's", sseID)
	}
	// Several lease lifetimes pass; the running call is never given up on.
	for end := time.Now().Add(4 * lease); time.Now().Before(end); {
		evs, err := f.Sessions.CallEventsAfter(ctx, sid, stream, first)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 0 {
			t.Fatalf("a running call's resume got %q", evs)
		}
		time.Sleep(lease / 3) // sampling the state; no signal to wait on
	}
	log.Close() // the owner stops without an answer
	var evs []store.Event
	if !testsupport.Eventually(t, 5*time.Second, func() bool {
		evs, err = f.Sessions.CallEventsAfter(ctx, sid, stream, first)
		return err == nil && len(evs) == 1
	}) {
		t.Fatalf("the stream of a call whose owner stopped did not end: %q, %v", evs, err)
	}
	var answer struct {
		ID    string               `json:"id"`
		Error struct{ Code int64 } `json:"error"`
	}
	if err := json.Unmarshal(evs[0].Data, &answer); err != nil || answer.ID != "call-1" || answer.Error.Code != router.CodeInternalError {
		t.Fatalf("lost call's terminal event %s, want a -32603 error for id \"call-1\"", evs[0].Data)
	}
	if evs[0].ID != first {
		t.Fatalf("terminal event id %s, want the resume position %s (nothing new was logged)", evs[0].ID, first)
	}
}

// A call that ends normally logs its answer and is done, not lost, though
// its lease is gone.
func TestCallLog_AnswerEndsTheStream(t *testing.T) {
	f := routertest.New(t, redisSrv.URL(), options{Sessions: session.Options{CallLeaseTTL: time.Second}}, routertest.Spec{Key: "a"})
	sid, _ := f.Initialize(nil)
	ctx := context.Background()
	log := f.Sessions.NewCallLog(sid, mustID(3))
	sseID, err := log.Append(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	stream, first, _ := session.ParseCallEventID(sseID)
	if _, err := log.End(ctx, []byte(`{"jsonrpc":"2.0","id":3,"result":{}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := log.Append(ctx, []byte(`late`)); err == nil {
		t.Fatal("Append after End succeeded")
	}
	evs, err := f.Sessions.CallEventsAfter(ctx, sid, stream, first)
	if err != nil || len(evs) != 1 || !strings.Contains(string(evs[0].Data), `"result"`) {
		t.Fatalf("events after the priming one = %q, %v; want only the answer", evs, err)
	}
	if _, err := f.Sessions.CallEventsAfter(ctx, sid, "cnosuch", first); !errors.Is(err, session.ErrUnknownCallStream) {
		t.Fatalf("unknown stream: %v", err)
	}
	// A log that never streamed stores nothing and ends cleanly.
	quiet := f.Sessions.NewCallLog(sid, mustID(4))
	if id, err := quiet.End(ctx, []byte(`{}`)); id != "" || err != nil {
		t.Fatalf("End of a log that never streamed = %q, %v", id, err)
	}
}
