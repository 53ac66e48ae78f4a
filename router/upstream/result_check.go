package upstream

import (
	"context"

	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A backend's answer is checked whole as it is decoded, and a caller that
// walks its result afterwards (a list page: its items, their names)
// crossed the same bytes a second time. Such a caller can check the
// result in its own walk instead (wire.ValidMembersElementMembers) and
// ask, with WithResultCheck, that the decoder leave the result to it.

type resultCheckKey struct{}

// WithResultCheck has the Call made with ctx leave the checking of its
// answer's result to check (see wire.DecodeOwnedChecked, whose contract
// check keeps: it walks the result starting at data[i] and returns where
// it ends, or -1 when it is not valid JSON). check may be called for more
// than the one answer the Call returns (a retried call, a stray
// response), and not at all (an error, a backend that answers over the
// 2024-11-05 transport): the caller compares what it walked with the
// Result it gets. Give ctx to that Call alone, not to a handshake.
func WithResultCheck(ctx context.Context, check func(data []byte, i int) (end int)) context.Context {
	return context.WithValue(ctx, resultCheckKey{}, check)
}

// decodeAnswer decodes a message of a backend's answer to ctx's call,
// which the caller hands over (wire.DecodeOwned), its result checked by
// ctx's result check when there is one.
func decodeAnswer(ctx context.Context, data []byte) (jsonrpc.Message, error) {
	if check, _ := ctx.Value(resultCheckKey{}).(func(data []byte, i int) int); check != nil {
		return wire.DecodeOwnedChecked(data, check)
	}
	return wire.DecodeOwned(data)
}
