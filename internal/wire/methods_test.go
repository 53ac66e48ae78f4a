package wire

import (
	"slices"
	"testing"
)

// The tables' facts hang together: a row that breaks one of these rules
// is a fact written wrong, which would send a request down the wrong path.
func TestMethodFactsAgree(t *testing.T) {
	handshakes := 0
	for _, name := range MethodNames() {
		m := MethodOf(name)
		if m.Hooked != (m.Arguments != "") {
			t.Errorf("%s: Hooked %v but Arguments %q: a hooked method names what its client chose", name, m.Hooked, m.Arguments)
		}
		if m.Tool && (m.Routed != "tool" || !m.Hooked) {
			t.Errorf("%s: Tool but routed %q, hooked %v", name, m.Routed, m.Hooked)
		}
		if (m.RateLimited || m.Taskable || m.ParamHeaders) && !m.Tool {
			t.Errorf("%s: rate limits, tasks and Mcp-Param headers concern tool calls", name)
		}
		if m.Task != (m.TaskAction != TaskNone) {
			t.Errorf("%s: Task %v but TaskAction %d: each Task method says what it does to its task", name, m.Task, m.TaskAction)
		}
		if m.Subscription != SubscriptionNone && (m.Routed != "resource" || !m.Session) {
			t.Errorf("%s: a subscription is a 2025 session's, to one resource", name)
		}
		if m.ResultURIs != URIsNone && m.Routed == "" {
			t.Errorf("%s: names a backend's resources in its result but is not routed to one backend", name)
		}
		if m.OpenEnded && (!m.Modern || m.Routed != "") {
			t.Errorf("%s: an open-ended answer is a 2026-07-28 listen, not routed", name)
		}
		if m.Handshake {
			handshakes++
			if !m.Session {
				t.Errorf("%s: a handshake opens a 2025 session", name)
			}
		}
		if r, ok := LookupServerRequest(name); ok && r.Liveness != m.Liveness {
			t.Errorf("%s: a liveness check both ways, but the tables disagree", name)
		}
	}
	if handshakes != 1 {
		t.Errorf("%d handshake methods, want 1", handshakes)
	}
}

func TestMethodRows(t *testing.T) {
	for _, tc := range []struct {
		method string
		want   func(Method) bool
	}{
		{"initialize", func(m Method) bool { return m.Handshake && !m.Modern }},
		{"ping", func(m Method) bool { return m.Liveness }},
		{"subscriptions/listen", func(m Method) bool { return m.OpenEnded }},
		{"tools/call", func(m Method) bool {
			return m.Tool && m.RateLimited && m.Taskable && m.ParamHeaders && m.Arguments == "arguments" && m.ResultURIs == URIsInContent
		}},
		{"prompts/get", func(m Method) bool { return !m.Tool && m.Arguments == "arguments" && m.ResultURIs == URIsInMessages }},
		{"resources/read", func(m Method) bool { return m.Arguments == "uri" && m.ResultURIs == URIsInContents }},
		{"resources/directory/read", func(m Method) bool { return m.ResultURIs == URIsInChildren }},
		{"skills/get", func(m Method) bool { return m.ResultURIs == URIsInSkill }},
		{"resources/subscribe", func(m Method) bool { return m.Subscription == Subscribes }},
		{"resources/unsubscribe", func(m Method) bool { return m.Subscription == Unsubscribes }},
		{"completion/complete", func(m Method) bool { return m.Routed == "reference" && !m.Hooked && m.ResultURIs == URIsNone }},
	} {
		m, ok := LookupMethod(tc.method)
		if !ok || !tc.want(m) {
			t.Errorf("%s: row %+v (known %v)", tc.method, m, ok)
		}
	}
	if m, ok := LookupMethod("notifications/progress"); ok || m != (Method{}) {
		t.Errorf("a notification has a method row: %+v", m)
	}
}

func TestNotificationFactsAgree(t *testing.T) {
	var fromClient, listChanges []string
	for name, n := range notifications {
		if n.FromClient {
			fromClient = append(fromClient, name)
		}
		if n.ListChanged != "" {
			listChanges = append(listChanges, name)
			if want := "notifications/" + n.ListChanged + "/list_changed"; name != want {
				t.Errorf("%s announces the %s list, named %s", name, n.ListChanged, want)
			}
		}
		kinds := 0
		for _, f := range []bool{n.ListChanged != "", n.ResourceUpdate, n.Progress, n.Log, n.Cancel, n.Handshake, n.TaskStatus, n.ListenAck} {
			if f {
				kinds++
			}
		}
		if kinds > 1 || (kinds == 0 && !n.FromClient) {
			t.Errorf("%s: %d kinds of notification, want one (a client's may have none)", name, kinds)
		}
		if n.AboutRequest() && n.AboutSession() {
			t.Errorf("%s: about a request and about a session", name)
		}
		if _, ok := KnownName(name); ok != n.FromClient {
			t.Errorf("%s: served (a metrics label) %v, from a client %v", name, ok, n.FromClient)
		}
	}
	slices.Sort(fromClient)
	if c := slices.Sorted(slices.Values(ClientNotifications[:])); !slices.Equal(c, fromClient) {
		t.Errorf("ClientNotifications %v, rows from clients %v", c, fromClient)
	}
	slices.Sort(listChanges)
	if l := slices.Sorted(slices.Values(ListChanges[:])); !slices.Equal(l, listChanges) {
		t.Errorf("ListChanges %v, list_changed rows %v", l, listChanges)
	}
}

func TestNotificationRows(t *testing.T) {
	for name, want := range map[string]func(Notification) bool{
		"notifications/progress":                   func(n Notification) bool { return n.Progress && n.AboutRequest() },
		"notifications/cancelled":                  func(n Notification) bool { return n.Cancel && n.AboutRequest() },
		"notifications/message":                    func(n Notification) bool { return n.Log && !n.AboutRequest() && !n.AboutSession() },
		"notifications/resources/updated":          func(n Notification) bool { return n.ResourceUpdate && n.AboutSession() },
		"notifications/tools/list_changed":         func(n Notification) bool { return n.ListChanged == "tools" && n.AboutSession() },
		"notifications/initialized":                func(n Notification) bool { return n.Handshake && n.FromClient },
		"notifications/roots/list_changed":         func(n Notification) bool { return n.ListChanged == "" && n.FromClient },
		"notifications/tasks":                      func(n Notification) bool { return n.TaskStatus },
		"notifications/subscriptions/acknowledged": func(n Notification) bool { return n.ListenAck },
	} {
		if n, ok := LookupNotification(name); !ok || !want(n) {
			t.Errorf("%s: row %+v (known %v)", name, n, ok)
		}
	}
	if n := NotificationOf("notifications/unknown"); n != (Notification{}) || n.AboutRequest() || n.AboutSession() {
		t.Errorf("an unknown notification has facts: %+v", n)
	}
}

func TestServerRequestRows(t *testing.T) {
	for name, r := range serverRequests {
		if (r.Capability == "") == !r.Liveness {
			t.Errorf("%s: a request is forwarded under a capability or answered at once, not both or neither: %+v", name, r)
		}
		if _, ok := LookupMethod(name); ok && !r.Liveness {
			t.Errorf("%s: the gateway serves a request it also forwards to clients", name)
		}
	}
	for name, capability := range map[string]string{"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"} {
		if r, ok := LookupServerRequest(name); !ok || r.Capability != capability {
			t.Errorf("%s: %+v, want capability %s", name, r, capability)
		}
	}
	if r, ok := LookupServerRequest("ping"); !ok || !r.Liveness {
		t.Errorf("ping: %+v", r)
	}
	if r, ok := LookupServerRequest("tools/call"); ok || r != ServerRequestOf("tools/call") {
		t.Errorf("tools/call is a server-to-client request: %+v", r)
	}
}
