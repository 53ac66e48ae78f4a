package upstream

import (
	"github.com/mcpgw/gateway/internal/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A backend's answer is checked whole as it is decoded, and a caller that
// walks its result afterwards (a list page: its items, their names)
// crossed the same bytes a second time. Such a caller can check the
// result in its own walk instead (wire.ValidMembersElementMembers) and
// ask, with CallOptions.ResultCheck, that the decoder leave the result to it.

// decodeAnswer decodes a message of a backend's answer to a call, which
// the caller hands over (wire.DecodeOwned), its result checked by the
// call's check when it has one (CallOptions.ResultCheck).
func decodeAnswer(check func(data []byte, i int) int, data []byte) (jsonrpc.Message, error) {
	if check != nil {
		return wire.DecodeOwnedChecked(data, check)
	}
	return wire.DecodeOwned(data)
}
