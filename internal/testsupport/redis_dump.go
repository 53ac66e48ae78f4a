package testsupport

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// Dump is every key of the server matching pattern, each with its value
// whatever its type, as one text: what a test searches for a value that
// must never be stored (a secret, a backend's session id in clear). A key
// of a type it cannot read fails the test, so nothing escapes the search.
func (s *RedisServer) Dump(t testing.TB, pattern string) string {
	t.Helper()
	ctx, cl := context.Background(), s.client
	var b strings.Builder
	iter := cl.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		key := iter.Val()
		b.WriteString(key + "\n")
		switch typ := cl.Type(ctx, key).Val(); typ {
		case "string":
			b.WriteString(cl.Get(ctx, key).Val())
		case "hash":
			for k, v := range cl.HGetAll(ctx, key).Val() {
				b.WriteString(k + "=" + v + "\n")
			}
		case "zset":
			b.WriteString(strings.Join(cl.ZRange(ctx, key, 0, -1).Val(), "\n"))
		case "set":
			b.WriteString(strings.Join(cl.SMembers(ctx, key).Val(), "\n"))
		case "list":
			b.WriteString(strings.Join(cl.LRange(ctx, key, 0, -1).Val(), "\n"))
		case "stream":
			for _, m := range cl.XRange(ctx, key, "-", "+").Val() {
				for k, v := range m.Values {
					fmt.Fprintf(&b, "%s=%v\n", k, v) // as stored: no escaping to hide a value
				}
			}
		case "none": // expired between the scan and now
		default:
			t.Fatalf("testsupport: dump: key %s: type %s not dumped", key, typ)
		}
		b.WriteString("\n")
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("testsupport: dump: %v", err)
	}
	return b.String()
}
