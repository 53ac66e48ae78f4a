package bufpool_test

import (
	"fmt"

	"github.com/mcpgw/gateway/internal/bufpool"
)

// A request reads a backend's page into a lent buffer and gives it back
// once its answer, a copy of what it needed, is written.
func ExampleGet() {
	page := bufpool.Get(150_000) // a backend's list page, say
	n := copy(page, `{"tools":[]}`)
	answer := append([]byte(nil), page[:n]...) // what outlives the request
	bufpool.Put(page)
	fmt.Println(len(page), string(answer))
	// Output: 196608 {"tools":[]}
}
