package worker

import (
	"context"
	"errors"

	"github.com/cruciblehq/crucible/lang/js/engine"
	"github.com/cruciblehq/crucible/toolchannel"
)

// toolsChannel is the engine's way to the execution's tools channel, or
// nil when the execution has none.
func toolsChannel() engine.Tools {
	c := toolchannel.Open()
	if c == nil {
		return nil
	}
	return toolsClient{c}
}

// toolsClient is the channel's client as the engine takes it: an error
// answer is an *engine.ToolError, which the program's Error carries.
type toolsClient struct{ c *toolchannel.Client }

// Do implements engine.Tools.
func (t toolsClient) Do(ctx context.Context, req []byte) ([]byte, error) {
	out, err := t.c.Do(ctx, req)
	if e := (*toolchannel.Error)(nil); errors.As(err, &e) {
		return nil, &engine.ToolError{Kind: e.Kind, Message: e.Message}
	}
	return out, err
}
