package bufpool_test

import (
	"fmt"

	"github.com/mcpgw/gateway/internal/bufpool"
)

// A request reads its pages into buffers lent by one Lease and gives them
// back together once its answer, a copy of what it needed, is written.
func ExampleLease() {
	var lease bufpool.Lease
	defer lease.Release()

	page := lease.Get(150_000) // a backend's list page, say
	n := copy(page, `{"tools":[]}`)
	answer := append([]byte(nil), page[:n]...) // what outlives the request
	fmt.Println(len(page), string(answer))
	// Output: 262144 {"tools":[]}
}
