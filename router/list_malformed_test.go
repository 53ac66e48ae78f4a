package router_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/router"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A list page's answer is checked in the same pass that finds its items
// (wire.ValidMembersElementMembers), not by the decoder beforehand. An
// answer that is not valid JSON deep inside an item must still fail that
// backend, whatever the protocol and however the answer is framed, and
// never reach the client: the other backends are listed and the broken
// one is named in _meta.
func TestList_BackendAnswerNotJSONInsideAnItemIsSkipped(t *testing.T) {
	for name, corrupt := range map[string][2]string{
		"control character in a string": {`"description":"`, "\"description\":\"\x01"},
		"comma opening an object":       {`"inputSchema":{`, `"inputSchema":{,`},
		"bad literal":                   {`"inputSchema":{`, `"inputSchema":{"x":tru,`},
		"bad escape":                    {`"description":"`, `"description":"\q`},
	} {
		for _, modern := range []bool{true, false} {
			t.Run(name+"/modern="+strconv.FormatBool(modern), func(t *testing.T) {
				f := newFixture(t, backendSpec{Key: "broken", Adjust: func(b *router.Backend) {
					b.URL = corruptingFront(t, b.URL, `"tools/list"`, []byte(corrupt[0]), []byte(corrupt[1]))
				}}, backendSpec{Key: "plain"})
				var resp *jsonrpc.Response
				if modern {
					resp = f.Router.Handle(t.Context(), &router.Call{VHost: f.VHost, Principal: "alice",
						Request: &jsonrpc.Request{ID: mustID(1), Method: "tools/list"}, Caller: &router.ModernClient{}})
				} else {
					sid, _ := f.Initialize(nil)
					resp = f.Call(sid, "tools/list", nil)
				}
				res := result(t, resp)
				tools := names(t, res, "tools")
				if !slices.Contains(tools, "plain-echo") || slices.ContainsFunc(tools, func(n string) bool { return len(n) > 7 && n[:7] == "broken-" }) {
					t.Fatalf("tools %v: want plain's and none of broken's", tools)
				}
				meta, _ := res["_meta"].(map[string]any)
				if skipped, _ := meta[router.MetaSkippedBackends].([]any); !slices.Contains(skipped, any("broken")) {
					t.Fatalf("_meta %v: want broken named as skipped", meta)
				}
			})
		}
	}
}

// corruptingFront is a proxy to backend that replaces the first old with
// new in the answer to every POST whose body contains match.
func corruptingFront(t *testing.T, backend, match string, old, new []byte) string {
	t.Helper()
	u, err := url.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	target := &url.URL{Scheme: u.Scheme, Host: u.Host}
	plain := httputil.NewSingleHostReverseProxy(target)
	corrupting := httputil.NewSingleHostReverseProxy(target)
	corrupting.ModifyResponse = func(resp *http.Response) error {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if !bytes.Contains(body, old) {
			t.Errorf("the answer has no %q to corrupt: %.200s", old, body)
		}
		resp.Body = io.NopCloser(bytes.NewReader(bytes.Replace(body, old, new, 1)))
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		return nil
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(match)) {
				corrupting.ServeHTTP(w, r)
				return
			}
		}
		plain.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path
}

// A backend on the 2024-11-05 transport answers through a decoder that
// does not hand the result to the list walk (upstream.CallOptions.ResultCheck):
// the router walks the result it gets, and its tools are listed.
func TestList_LegacyTransportBackendIsWalkedAfterTheCall(t *testing.T) {
	f := newFixture(t, backendSpec{Key: "legacy", Opts: testsupport.BackendOptions{LegacySSE: true}}, backendSpec{Key: "plain"})
	sid, _ := f.Initialize(nil)
	tools := names(t, result(t, f.Call(sid, "tools/list", nil)), "tools")
	if !slices.Contains(tools, "legacy-echo") || !slices.Contains(tools, "plain-echo") {
		t.Fatalf("tools %v: want both backends' echo", tools)
	}
}
