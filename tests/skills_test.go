package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpgw/gateway/internal/testsupport"
	"github.com/mcpgw/gateway/internal/testsupport/skillserver"
)

// Skills (SEP-2640) end to end: two gateway processes on one Redis, two
// go-sdk skills servers behind the "demo" vhost (keys one and two) and
// one alone behind "solo", clients of both generations whose requests
// alternate between the instances.

// skillsCluster starts the backends and two instances. Callers in the
// group "restricted" do not see the refunds skill on demo.
func skillsCluster(t *testing.T) (c *cluster, one, two *testsupport.Backend, eps []testsupport.Endpoint) {
	t.Helper()
	c = &cluster{t: t, bin: testsupport.BuildBinary(t, "github.com/mcpgw/gateway/cmd/gateway"),
		backends: map[string]*testsupport.Backend{}}
	// Stateless: each serves both generations; a page holds two skills,
	// so the walk has pages from both backends.
	one = testsupport.StartBackend(t, testsupport.BackendOptions{Name: "one", Skills: skillserver.FixtureOne, Stateless: true, PageSize: 2})
	two = testsupport.StartBackend(t, testsupport.BackendOptions{Name: "two", Skills: skillserver.FixtureTwo, Stateless: true, PageSize: 2})
	cfg := fmt.Sprintf(`%s  demo:
    access:
      - when: "'restricted' in claims.groups"
        allow: ["*"]
        deny: ["skill://one/acme/billing/refunds", "skill://one/acme/billing/refunds/*"]
      - allow: ["*"]
    backends:
      one: {url: %s}
      two: {url: %s}
  solo:
    backends:
      two: {url: %s}
`, configHead(), one.URL, two.URL, two.URL)
	c.config = filepath.Join(t.TempDir(), "gateway.yaml")
	c.writeConfig(cfg)
	a, b := c.start(), c.start()
	return c, one, two, []testsupport.Endpoint{a, b}
}

// skillsClient sends requests of one generation to one vhost, each to
// the next endpoint.
type skillsClient struct {
	t      *testing.T
	vhost  string
	token  string
	modern bool
	legacy *testsupport.Client
	eps    []testsupport.Endpoint
	next   int
}

func newSkillsClient(t *testing.T, c *cluster, vhost string, modern bool, eps []testsupport.Endpoint, groups ...string) *skillsClient {
	t.Helper()
	sc := &skillsClient{t: t, vhost: vhost, token: c.groupToken("alice", groups...), modern: modern, eps: eps}
	if !modern {
		sc.legacy = &testsupport.Client{T: t, Token: sc.token, VHost: vhost}
		sc.legacy.Initialize(eps[1], nil)
	}
	return sc
}

// call sends one request and returns its final message.
func (sc *skillsClient) call(method string, params map[string]any) *testsupport.Message {
	sc.t.Helper()
	ep := sc.eps[sc.next%len(sc.eps)]
	sc.next++
	var reply *testsupport.Reply
	if sc.modern {
		reply = modernPost(sc.t, ep, sc.vhost, sc.token, method, params)
	} else {
		reply = sc.legacy.Request(ep, method, params)
	}
	m := reply.Final()
	if m == nil {
		sc.t.Fatalf("%s: no answer (status %d): %s", method, reply.Status, reply.Body)
	}
	return m
}

func (sc *skillsClient) result(method string, params map[string]any) map[string]any {
	sc.t.Helper()
	m := sc.call(method, params)
	if m.Error != nil {
		sc.t.Fatalf("%s %v: %+v", method, params, m.Error)
	}
	var res map[string]any
	if err := json.Unmarshal(m.Result, &res); err != nil {
		sc.t.Fatal(err)
	}
	return res
}

// modernPost sends one 2026-07-28 request (no session) with token to
// vhost, Mcp-Name mirroring the body where the revision asks for it.
func modernPost(t *testing.T, ep testsupport.Endpoint, vhost, token, method string, params map[string]any) *testsupport.Reply {
	t.Helper()
	p := map[string]any{"_meta": map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	}}
	for k, v := range params {
		p[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "/servers/"+vhost+"/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	switch method {
	case "tools/call", "prompts/get":
		req.Header.Set("Mcp-Name", params["name"].(string))
	case "resources/read":
		req.Header.Set("Mcp-Name", params["uri"].(string))
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return testsupport.ReadReply(t, ep.Do(t, req))
}

// walkSkills pages through skills/list and returns the entries, raw, by
// uri, in the order they came.
func (sc *skillsClient) walkSkills() (uris []string, entries map[string]json.RawMessage) {
	sc.t.Helper()
	entries = map[string]json.RawMessage{}
	cursor := ""
	for page := 0; ; page++ {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		m := sc.call("skills/list", params)
		if m.Error != nil {
			sc.t.Fatalf("skills/list: %+v", m.Error)
		}
		var res struct {
			Skills     []json.RawMessage `json:"skills"`
			NextCursor string            `json:"nextCursor"`
			TTLMs      *int64            `json:"ttlMs"`
		}
		if err := json.Unmarshal(m.Result, &res); err != nil {
			sc.t.Fatal(err)
		}
		if sc.modern != (res.TTLMs != nil) {
			sc.t.Fatalf("page %s: ttlMs on 2026-07-28 pages only", m.Result)
		}
		for _, e := range res.Skills {
			uri := skillserverURI(sc.t, e)
			uris = append(uris, uri)
			entries[uri] = e
		}
		if cursor = res.NextCursor; cursor == "" {
			return uris, entries
		}
		if page > 20 {
			sc.t.Fatal("the walk does not end")
		}
	}
}

func skillserverURI(t *testing.T, entry json.RawMessage) string {
	var e struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal(entry, &e); err != nil || e.URI == "" {
		t.Fatalf("entry %s has no uri", entry)
	}
	return e.URI
}

// verifySkill gets a skill and reads every file it lists through the
// gateway, checking each against its digest and size, as a host does.
func (sc *skillsClient) verifySkill(uri string, listed json.RawMessage) {
	sc.t.Helper()
	m := sc.call("skills/get", map[string]any{"uri": uri})
	if m.Error != nil {
		sc.t.Fatalf("skills/get %s: %+v", uri, m.Error)
	}
	var got struct {
		Skill json.RawMessage `json:"skill"`
	}
	if err := json.Unmarshal(m.Result, &got); err != nil {
		sc.t.Fatal(err)
	}
	if !jsonEqual(got.Skill, listed) {
		sc.t.Fatalf("skills/get %s = %s, listed as %s", uri, got.Skill, listed)
	}
	var entry struct {
		Resources []struct {
			URI    string `json:"uri"`
			Digest string `json:"digest"`
			Size   int    `json:"size"`
		} `json:"resources"`
	}
	_ = json.Unmarshal(got.Skill, &entry)
	if len(entry.Resources) == 0 {
		sc.t.Fatalf("%s lists no files", uri)
	}
	for _, f := range entry.Resources {
		res := sc.result("resources/read", map[string]any{"uri": f.URI})
		c := res["contents"].([]any)[0].(map[string]any)
		text, _ := c["text"].(string)
		if c["uri"] != f.URI || skillserver.Digest([]byte(text)) != f.Digest || len(text) != f.Size {
			sc.t.Fatalf("%s read as %v: does not verify against %s, %d bytes", f.URI, c, f.Digest, f.Size)
		}
	}
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

func TestSkills_TwoBackendsThroughTwoInstancesBothGenerations(t *testing.T) {
	c, one, _, eps := skillsCluster(t)
	wantURIs := []string{"skill://one/acme/billing/SKILL.md", "skill://one/acme/billing/refunds/SKILL.md",
		"skill://one/git-workflow/SKILL.md", "skill://two/git-workflow/SKILL.md", "skill://two/pdf-processing/SKILL.md"}
	for _, modern := range []bool{false, true} {
		t.Run(map[bool]string{false: "2025-11-25", true: "2026-07-28"}[modern], func(t *testing.T) {
			sc := newSkillsClient(t, c, "demo", modern, eps)
			// The extension, from either instance.
			if !modern {
				// (initialize ran: its capabilities are the session's)
			} else {
				res := sc.result("server/discover", nil)
				ext := res["capabilities"].(map[string]any)["extensions"].(map[string]any)
				if fmt.Sprint(ext[skillserver.Extension]) != "map[directoryRead:true]" {
					t.Fatalf("server/discover extensions %v", ext)
				}
			}
			uris, entries := sc.walkSkills()
			slices.Sort(uris) // each page is sorted, not the walk
			if !slices.Equal(uris, wantURIs) {
				t.Fatalf("skills/list %v, want %v", uris, wantURIs)
			}
			for _, uri := range []string{"skill://one/acme/billing/SKILL.md", "skill://one/acme/billing/refunds/SKILL.md", "skill://two/pdf-processing/SKILL.md"} {
				sc.verifySkill(uri, entries[uri])
			}
			// Frontmatter byte for byte as the backend wrote it.
			direct := backendCall(t, one.URL, "skills/get", map[string]any{"uri": "skill://acme/billing/refunds/SKILL.md"})
			if fm := rawMember(t, rawMember(t, direct, "skill"), "frontmatter"); !bytes.Equal(fm, rawMember(t, entries[wantURIs[1]], "frontmatter")) {
				t.Fatalf("frontmatter through the gateway %s, the backend's %s", rawMember(t, entries[wantURIs[1]], "frontmatter"), fm)
			}
			dir := sc.result("resources/directory/read", map[string]any{"uri": "skill://two/pdf-processing/templates/regional"})
			if fmt.Sprint(dir["resources"]) != "[map[mimeType:text/markdown name:eu-invoice.md uri:skill://two/pdf-processing/templates/regional/eu-invoice.md]]" {
				t.Fatalf("directory %v", dir)
			}
			if m := sc.call("skills/get", map[string]any{"uri": "skill://one/acme/billing/chargebacks/SKILL.md"}); m.Error == nil || m.Error.Code != -32602 {
				t.Fatalf("an unknown skill: %+v", m)
			}
		})
	}
}

func TestSkills_AccessRuleHidesOneSkill(t *testing.T) {
	c, _, _, eps := skillsCluster(t)
	for _, modern := range []bool{false, true} {
		sc := newSkillsClient(t, c, "demo", modern, eps, "restricted")
		uris, _ := sc.walkSkills()
		if slices.Contains(uris, "skill://one/acme/billing/refunds/SKILL.md") || len(uris) != 4 {
			t.Fatalf("modern %v: %v: refunds hidden, the rest listed", modern, uris)
		}
		for _, uri := range []string{"skill://one/acme/billing/refunds/SKILL.md", "skill://one/acme/billing/refunds/examples/email.md"} {
			method := map[bool]string{true: "skills/get", false: "resources/read"}[strings.HasSuffix(uri, "SKILL.md")]
			if m := sc.call(method, map[string]any{"uri": uri}); m.Error == nil || m.Error.Code != -32602 || !strings.Contains(m.Error.Message, "no backend of this virtual host owns it") {
				t.Fatalf("modern %v: %s %s: %+v, refused as unknown", modern, method, uri, m)
			}
		}
		// The enclosing skill stays: its manifest is the backend's, whole.
		if m := sc.call("skills/get", map[string]any{"uri": "skill://one/acme/billing/SKILL.md"}); m.Error != nil {
			t.Fatalf("billing: %+v", m.Error)
		}
	}
}

func TestSkills_SingleBackendVHostUnchanged(t *testing.T) {
	c, _, two, eps := skillsCluster(t)
	direct := backendCall(t, two.URL, "skills/list", nil)
	for _, modern := range []bool{false, true} {
		sc := newSkillsClient(t, c, "solo", modern, eps)
		uris, entries := sc.walkSkills()
		var want []json.RawMessage
		_ = json.Unmarshal(rawMember(t, direct, "skills"), &want)
		if len(want) != 2 || len(uris) != len(want) {
			t.Fatalf("solo lists %v; the backend's first page %s", uris, direct)
		}
		for _, w := range want {
			if got := entries[skillserverURI(t, w)]; !bytes.Equal(got, w) {
				t.Fatalf("modern %v: entry %s, the backend's %s: byte for byte", modern, got, w)
			}
		}
		sc.verifySkill("skill://pdf-processing/SKILL.md", entries["skill://pdf-processing/SKILL.md"])
	}
}

// backendCall posts one 2025-era request to a stateless backend directly
// and returns its result.
func backendCall(t *testing.T, url, method string, params any) json.RawMessage {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	reply := testsupport.ReadReply(t, res)
	if reply.Error() != nil {
		t.Fatalf("%s: %+v", method, reply.Error())
	}
	return reply.Final().Result
}

// rawMember is obj's member key, as it is written.
func rawMember(t *testing.T, obj json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		t.Fatalf("%s: %v", obj, err)
	}
	return m[key]
}
