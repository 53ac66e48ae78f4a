package testsupport

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"time"
)

// DropAfterSending sends a request of protocol 2026-07-28 to the gateway
// process ep over a connection of its own and closes the connection as
// soon as the request is written: a client whose connection dropped while
// its request was on the way or being served. Whether the gateway acted
// on the request before it saw the drop is left to chance, as in life.
func (c *Client) DropAfterSending(ep *GatewayProcess, method string, params map[string]any, caps any) {
	c.T.Helper()
	body, err := json.Marshal(ModernMessage(c.NextID(), method, params, caps))
	if err != nil {
		c.T.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, strings.TrimRight(ep.URL, "/")+c.Path(), strings.NewReader(string(body)))
	if err != nil {
		c.T.Fatal(err)
	}
	req.Header = c.Header("application/json, text/event-stream")
	req.Header.Set("Content-Type", "application/json")
	for k, v := range ModernHeaders(method, params) {
		req.Header.Set(k, v)
	}
	conn, err := net.DialTimeout("tcp", req.URL.Host, 10*time.Second)
	if err != nil {
		c.T.Fatal(err)
	}
	w := bufio.NewWriter(conn)
	if err := req.Write(w); err != nil {
		c.T.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		c.T.Fatal(err)
	}
	conn.Close()
}

// ModernStreamReply is ModernStream for a request that may be refused: it
// returns the whole answer when its status is not 200, and a 200 reply
// with nothing read (the stream closed) otherwise.
func (c *Client) ModernStreamReply(ep Endpoint, id any, method string, params map[string]any, caps any) *Reply {
	c.T.Helper()
	res := c.postModernStream(ep, id, method, params, caps)
	if res.StatusCode == http.StatusOK {
		res.Body.Close()
		return &Reply{Status: res.StatusCode, Header: res.Header, t: c.T}
	}
	return ReadReply(c.T, res)
}
