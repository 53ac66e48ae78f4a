package router

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A decode failure says which member is wrong in JSON terms, never Go's.
func TestParamsError_SpeaksJSON(t *testing.T) {
	var p struct {
		Cursor string `json:"cursor"`
		Limit  int    `json:"limit"`
	}
	for src, want := range map[string]string{
		`{"cursor":3}`:    "tools/list: params.cursor must be a string",
		`{"limit":"x"}`:   "tools/list: params.limit must be an integer",
		`{"limit":1.5}`:   "tools/list: params.limit must be an integer",
		`[1]`:             "tools/list: params must be an object",
		`{"cursor":null}`: "",
	} {
		err := json.Unmarshal([]byte(src), &p)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", src, err)
			}
			continue
		}
		if e := paramsError("tools/list", err); e.Code != CodeInvalidParams || e.Message != want {
			t.Errorf("%s: %d %q, want %q", src, e.Code, e.Message, want)
		}
	}
}

// The status mark: a refusal carries its status and Retry-After to the
// transport; an ordinary answer carries none; a store failure is 503.
func TestRefusal_MarksStatus(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(1))
	resp := refuse(id, http.StatusTooManyRequests, 1500*time.Millisecond, rpcError(CodeRateLimited, "slow down"))
	if st, wait, ok := Refusal(resp); !ok || st != http.StatusTooManyRequests || wait != 1500*time.Millisecond {
		t.Fatalf("refusal: %d %v %v", st, wait, ok)
	}
	if wait, ok := RateLimited(resp); !ok || wait != 1500*time.Millisecond {
		t.Fatalf("RateLimited: %v %v", wait, ok)
	}
	if _, _, ok := Refusal(resultResponse(id, json.RawMessage(`{}`))); ok {
		t.Fatal("an ordinary answer carries a refusal")
	}
	r := New(nil, Options{Logger: slog.New(slog.DiscardHandler)})
	su := r.storeUnavailable(id, errors.New("boom"))
	if !StoreUnavailable(su) || rpcErrOf(su).Message != msgStoreUnavailable {
		t.Fatalf("store unavailable: %+v", su)
	}
	// A Failure is the response's error, and encodes as the JSON-RPC
	// error it wraps, data and all, on every path to the client.
	limited := refuse(id, http.StatusTooManyRequests, time.Second, &jsonrpc.Error{Code: CodeRateLimited, Message: "slow down", Data: json.RawMessage(`{"limit":"rate_limits[0]"}`)})
	want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32029,"message":"slow down","data":{"limit":"rate_limits[0]"}}}`
	for name, enc := range map[string]func() ([]byte, error){
		"EncodeResponse":   func() ([]byte, error) { return wire.EncodeResponse(limited) },
		"EncodeMessage":    func() ([]byte, error) { return wire.EncodeMessage(limited) },
		"EncodeResponseAs": func() ([]byte, error) { return wire.EncodeResponseAs(limited, json.RawMessage("1")) },
		"json.Marshal": func() ([]byte, error) {
			e, err := json.Marshal(limited.Error)
			return []byte(`{"jsonrpc":"2.0","id":1,"error":` + string(e) + `}`), err
		},
	} {
		got, err := enc()
		if err != nil || string(got) != want {
			t.Errorf("%s: %s (%v), want %s", name, got, err, want)
		}
	}
	if e := backendError("b", errors.New("dial tcp: refused")); e.Code != CodeInternalError || e.Message != `backend "b": dial tcp: refused` {
		t.Fatalf("backendError: %+v", e)
	}
}

// rpcErrOf is resp's JSON-RPC error (also inside a Failure), or nil.
func rpcErrOf(resp *jsonrpc.Response) *jsonrpc.Error {
	var e *jsonrpc.Error
	if resp == nil || !errors.As(resp.Error, &e) {
		return nil
	}
	return e
}

// TestWithModernStatus: a 2026-07-28 answer's transport errors carry their
// 4xx in a Failure (the transport reads Refusal, no table of its own); a
// call's own errors stay 200, and a Failure keeps its status.
func TestWithModernStatus(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(1))
	cases := []struct {
		code int64
		want int // 0: no Failure
	}{
		{wire.CodeMethodNotFound, http.StatusNotFound},
		{wire.CodeHeaderMismatch, http.StatusBadRequest},
		{wire.CodeMissingClientCapability, http.StatusBadRequest},
		{wire.CodeUnsupportedProtocolVersion, http.StatusBadRequest},
		{CodeInvalidParams, 0},
		{CodeInternalError, 0},
	}
	for _, tc := range cases {
		resp := withModernStatus(errorResponse(id, rpcError(tc.code, "x")))
		status, _, ok := Refusal(resp)
		if tc.want == 0 && ok || tc.want != 0 && (!ok || status != tc.want) {
			t.Errorf("code %d: Refusal = %d %v, want %d", tc.code, status, ok, tc.want)
		}
		if e := rpcErrOf(resp); e.Code != tc.code || e.Message != "x" {
			t.Errorf("code %d: error became %+v", tc.code, e)
		}
	}
	limited := refuse(id, http.StatusTooManyRequests, time.Second, rpcError(CodeRateLimited, "slow down"))
	if status, _, _ := Refusal(withModernStatus(limited)); status != http.StatusTooManyRequests {
		t.Errorf("a Failure's status became %d", status)
	}
	if withModernStatus(resultResponse(id, []byte(`{}`))).Error != nil {
		t.Error("a result became an error")
	}
}
