package openapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func styles(t *testing.T) *API {
	t.Helper()
	p, _ := filepath.Abs("testdata/styles.yaml")
	return load(t, p, Options{})
}

func TestLoad_ToolsAreNamedFromOperationIdsOrMethodAndPath(t *testing.T) {
	t.Parallel() // each test loads its own descriptions
	a := styles(t)
	want := []string{"forms_post", "get_things", "items_put", "things_delete"}
	if got := a.Names(); !slices.Equal(got, want) {
		t.Fatalf("names = %v, want %v", got, want)
	}
	var def struct {
		Title       string `json:"title"`
		Annotations map[string]any
	}
	_ = json.Unmarshal(a.Tool("items_put").Def(), &def)
	if def.Title != "Replace an item" || def.Annotations["destructiveHint"] != true || def.Annotations["idempotentHint"] != true || def.Annotations["readOnlyHint"] != false {
		t.Errorf("items_put: %+v", def)
	}
	_ = json.Unmarshal(a.Tool("get_things").Def(), &def)
	if def.Annotations["readOnlyHint"] != true {
		t.Errorf("get_things annotations: %v", def.Annotations)
	}
}

func TestLoad_SchemasBecomeJSONSchemaWithDefsForReferencesAndCycles(t *testing.T) {
	t.Parallel() // each test loads its own descriptions
	a := styles(t)
	var def struct {
		InputSchema  map[string]any `json:"inputSchema"`
		OutputSchema map[string]any `json:"outputSchema"`
	}
	if err := json.Unmarshal(a.Tool("items_put").Def(), &def); err != nil {
		t.Fatal(err)
	}
	in := def.InputSchema
	props := in["properties"].(map[string]any)
	for _, k := range []string{"id", "label", "matrix", "tags", "csv", "pipes", "filter", "query_id", "X-Trace", "session", "body"} {
		if props[k] == nil {
			t.Errorf("inputSchema has no property %q: %v", k, props)
		}
	}
	if props["Accept"] != nil {
		t.Error("an Accept header parameter must be ignored")
	}
	node := in["$defs"].(map[string]any)["Node"].(map[string]any)
	np := node["properties"].(map[string]any)
	if np["id"] != nil {
		t.Error("a readOnly property is in the inputSchema")
	}
	if typ := np["name"].(map[string]any)["type"]; !slices.Equal(toStrings(typ), []string{"string", "null"}) {
		t.Errorf("nullable name: type %v", typ)
	}
	if s := np["score"].(map[string]any); s["exclusiveMinimum"] != 0.0 || s["minimum"] != nil {
		t.Errorf("3.0 exclusiveMinimum: %v", s)
	}
	if items := np["children"].(map[string]any)["items"].(map[string]any); items["$ref"] != "#/$defs/Node" {
		t.Errorf("the cycle is not a reference: %v", items)
	}
	if def.OutputSchema["$ref"] != "#/$defs/Node" {
		t.Errorf("outputSchema: %v", def.OutputSchema)
	}
	if err := a.Tool("items_put").Validate(map[string]any{"id": "x", "label": []any{1.0}, "matrix": map[string]any{}, "body": map[string]any{"name": nil, "children": []any{map[string]any{"name": "c"}}}}); err != nil {
		t.Errorf("valid arguments refused: %v", err)
	}
	if err := a.Tool("items_put").Validate(map[string]any{"id": "x", "label": []any{1.0}, "matrix": map[string]any{}, "body": map[string]any{"children": []any{}}}); err == nil {
		t.Error("a body without its required name passed")
	}
	if err := a.Tool("items_put").Validate(map[string]any{"id": "x", "label": []any{1.0}, "matrix": map[string]any{}, "body": map[string]any{"name": "n"}, "nope": 1}); err == nil {
		t.Error("an unknown argument passed")
	}
	// An array answer is wrapped as the output schema says.
	_ = json.Unmarshal(a.Tool("get_things").Def(), &def)
	res := def.OutputSchema["properties"].(map[string]any)["result"].(map[string]any)
	item := res["items"].(map[string]any)["properties"].(map[string]any)
	if item["id"] == nil || item["secret"] != nil {
		t.Errorf("output keeps readOnly and drops writeOnly: %v", item)
	}
}

func toStrings(v any) []string {
	var out []string
	list, _ := v.([]any)
	for _, e := range list {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

func TestRequest_ParametersAreSerialisedAsTheirStyleSays(t *testing.T) {
	t.Parallel() // each test loads its own descriptions
	a := styles(t)
	args := map[string]json.RawMessage{
		"id":       json.RawMessage(`"a/b c"`),
		"label":    json.RawMessage(`[3,4,5]`),
		"matrix":   json.RawMessage(`{"b":"2","a":"1"}`),
		"tags":     json.RawMessage(`["x","y,z"]`),
		"csv":      json.RawMessage(`["x","y"]`),
		"pipes":    json.RawMessage(`["p","q"]`),
		"filter":   json.RawMessage(`{"state":"open"}`),
		"query_id": json.RawMessage(`12345678901234567890`),
		"X-Trace":  json.RawMessage(`["t1","t2"]`),
		"session":  json.RawMessage(`"s 1"`),
		"body":     json.RawMessage(`{"name": "n", "children": []}`),
	}
	hdr := http.Header{"X-Trace": {"config wins"}, "Cookie": {"k=v"}}
	req, err := a.Request(context.Background(), a.Tool("items_put"), args, hdr)
	if err != nil {
		t.Fatal(err)
	}
	wantURL := "https://eu.example.test/v2/items/a%2Fb%20c/.3.4.5/;matrix=a,1,b,2" +
		"?tags=x&tags=y%2Cz&csv=x,y&pipes=p|q&filter%5Bstate%5D=open&id=12345678901234567890"
	if req.URL.String() != wantURL {
		t.Errorf("URL\n got %s\nwant %s", req.URL, wantURL)
	}
	if req.Method != http.MethodPut || req.Header.Get("X-Trace") != "config wins" || req.Header.Get("Content-Type") != "application/json" {
		t.Errorf("method %s headers %v", req.Method, req.Header)
	}
	if c := req.Header.Get("Cookie"); c != "session=s%201; k=v" {
		t.Errorf("Cookie = %q", c)
	}
	body, _ := io.ReadAll(req.Body)
	if string(body) != `{"name":"n","children":[]}` {
		t.Errorf("body = %s", body)
	}
}

func TestRequest_FormBodiesAndHeaderLineBreaks(t *testing.T) {
	t.Parallel() // each test loads its own descriptions
	a := styles(t)
	req, err := a.Request(context.Background(), a.Tool("forms_post"), map[string]json.RawMessage{
		"body": json.RawMessage(`{"name":"a b&c","n":2,"list":["x","y"]}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(req.Body)
	if string(body) != "list=x&list=y&n=2&name=a%20b%26c" || req.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		t.Errorf("form body %q, %v", body, req.Header)
	}
	_, err = a.Request(context.Background(), a.Tool("items_put"), map[string]json.RawMessage{
		"id": json.RawMessage(`"i"`), "label": json.RawMessage(`[1]`), "matrix": json.RawMessage(`{}`),
		"X-Trace": json.RawMessage(`["a\r\nInjected: 1"]`)}, nil)
	if !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("a header value with a line break: %v", err)
	}
}

func TestResponse_OverTheLimitIsRefusedAndErrorsCarryTheStatus(t *testing.T) {
	t.Parallel() // each test loads its own descriptions
	p, _ := filepath.Abs("testdata/styles.yaml")
	a := load(t, p, Options{MaxResponseBytes: 10})
	resp := &http.Response{StatusCode: 200, ContentLength: 11, Header: http.Header{}}
	var tl *TooLargeError
	if _, err := a.ReadBody(resp, strings.NewReader("01234567890")); !errors.As(err, &tl) || tl.Declared != 11 {
		t.Fatalf("declared length past the limit: %v", err)
	}
	resp.ContentLength = -1
	if _, err := a.ReadBody(resp, strings.NewReader(strings.Repeat("x", 1<<20))); !errors.As(err, &tl) || tl.Declared != -1 {
		t.Fatalf("undeclared length past the limit: %v", err)
	}
	res := a.Tool("get_things").Result(&http.Response{StatusCode: 404, Header: http.Header{"Content-Type": {"application/json"}}}, []byte(`{"message":"Not Found"}`))
	var r struct {
		IsError bool `json:"isError"`
		Content []struct{ Text string }
	}
	_ = json.Unmarshal(res, &r)
	if !r.IsError || !strings.Contains(r.Content[0].Text, "HTTP 404 Not Found") || !strings.Contains(r.Content[0].Text, `"Not Found"`) {
		t.Errorf("404 result: %s", res)
	}
	res = a.Tool("get_things").Result(&http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}}}, []byte(`[{"id":1}]`))
	if !strings.Contains(string(res), `"structuredContent":{"result":[{"id":1}]}`) {
		t.Errorf("an array answer: %s", res)
	}
}

func TestLoad_ErrorsNameTheFieldAtFault(t *testing.T) {
	t.Parallel() // each test loads its own descriptions
	p, _ := filepath.Abs("testdata/styles.yaml")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	_ = os.WriteFile(bad, []byte(`{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"#/components/schemas/Missing"}}}}}}}}}`), 0o600)
	remote := filepath.Join(dir, "remote.json")
	_ = os.WriteFile(remote, []byte(`{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"https://schemas.example.test/x.json"}}}}}}}}}`), 0o600)
	outside := filepath.Join(dir, "sub", "outside.json")
	_ = os.MkdirAll(filepath.Dir(outside), 0o700)
	_ = os.WriteFile(outside, []byte(`{"openapi":"3.0.3","info":{"title":"x","version":"1"},"servers":[{"url":"https://x.test"}],"paths":{"/a":{"get":{"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"$ref":"../remote.json#/x"}}}}}}}}}`), 0o600)
	noServer := filepath.Join(dir, "noserver.json")
	_ = os.WriteFile(noServer, []byte(`{"openapi":"3.0.3","info":{"title":"x","version":"1"},"paths":{"/a":{"get":{"responses":{"200":{"description":"ok"}}}}}}`), 0o600)
	secured := filepath.Join(dir, "secured.yaml")
	_ = os.WriteFile(secured, []byte("openapi: 3.1.0\ninfo: {title: s, version: '1'}\nservers: [{url: 'https://s.test'}]\nsecurity: [{key: []}]\n"+
		"components: {securitySchemes: {key: {type: apiKey, in: query, name: api_key}}}\npaths: {/a: {get: {responses: {'200': {description: ok}}}}}\n"), 0o600)
	for _, c := range []struct {
		name, spec string
		o          Options
		field      string
		says       string
	}{
		{"unreadable", filepath.Join(dir, "none.json"), Options{}, "spec", "cannot read"},
		{"not a description", p + ".nope", Options{}, "spec", "cannot read"},
		{"broken reference", bad, Options{BaseURL: "https://x.test"}, "spec", "Missing"},
		{"remote reference", remote, Options{BaseURL: "https://x.test"}, "spec", "remote_refs"},
		{"outside the directory", outside, Options{}, "spec", "outside the description's directory"},
		{"glob matching nothing", p, Options{Operations: []string{"items/*", "nothing/*", "GET /nowhere"}}, "operations", `"nothing/*", "GET /nowhere"`},
		{"no server", noServer, Options{}, "base_url", "set openapi.base_url"},
		{"unsatisfied scheme", secured, Options{}, "security", `security scheme "key"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.o.Spec = c.spec
			_, err := Load(context.Background(), c.o)
			var fe *Error
			if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err = %v (field %v), want field %s saying %q", err, fe, c.field, c.says)
			}
		})
	}
	a := load(t, secured, Options{Credentials: Credentials{Headers: []string{"api_key"}}})
	req, err := a.Request(context.Background(), a.Tool("get_a"), nil, http.Header{"Api_key": {"k&1"}, "X-Other": {"o"}})
	if err != nil {
		t.Fatal(err)
	}
	if q, _ := url.ParseQuery(req.URL.RawQuery); q.Get("api_key") != "k&1" || req.Header.Get("Api_key") != "" || req.Header.Get("X-Other") != "o" {
		t.Errorf("query API key: %s %v", req.URL, req.Header)
	}
}
