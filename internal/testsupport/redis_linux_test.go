package testsupport_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/mcpgw/gateway/internal/testsupport"
)

// panicWithRedis makes this test binary, run again as a child, start a
// Redis, print its address and panic: a panicking test binary never
// reaches the TestMain that would stop its servers.
const panicWithRedis = "TESTSUPPORT_PANIC_WITH_REDIS"

// A test binary that dies leaves no redis-server behind (the kernel kills
// it with its parent, dieWithParent), so a panicking test cannot leak
// servers into the runs after it.
func TestStartRedis_ServerDiesWithATestBinaryThatPanics(t *testing.T) {
	if os.Getenv(panicWithRedis) == "1" {
		s, err := testsupport.StartRedis()
		if err != nil {
			fmt.Println("start:", err)
			os.Exit(3)
		}
		fmt.Printf("redis at %s\n", s.Addr)
		panic("deliberately, with a Redis running")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartRedis_ServerDiesWithATestBinaryThatPanics$", "-test.v")
	cmd.Env = append(os.Environ(), panicWithRedis+"=1")
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`redis at (\S+)`).FindSubmatch(out)
	if err == nil || m == nil {
		t.Fatalf("the child should have started a Redis and panicked (err %v); its output:\n%s", err, out)
	}
	addr := string(m[1])
	refused := func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	}
	if !testsupport.Eventually(t, 10*time.Second, refused) {
		t.Fatalf("the Redis at %s outlived the test binary that started it", addr)
	}
}
