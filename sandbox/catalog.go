package sandbox

import (
	"context"

	"github.com/cruciblehq/crucible/toolbridge"
)

// List lists the tools that the code may call through t, as ListTools does,
// starting the servers that have not started yet; a server's
// tools/list_changed notification refreshes its part. A nil Tools has none.
func (t *Tools) List(ctx context.Context) ([]Tool, error) {
	if t == nil {
		return nil, nil
	}
	return t.bridge.Tools(ctx)
}

// ListFor is List as the client sees it: a server with a login lists
// its tools through the client's own login (see toolbridge.Session.Tools).
func (t *Tools) ListFor(ctx context.Context, client string) ([]Tool, error) {
	if t == nil {
		return nil, nil
	}
	sess := t.bridge.NewSession()
	sess.SetCaller(toolbridge.Caller{Client: client})
	return sess.Tools(ctx)
}

// Failing names the servers whose last start failed, starting none; see
// toolbridge.Bridge.Failing.
func (t *Tools) Failing() []string {
	if t == nil {
		return nil
	}
	return t.bridge.Failing()
}

// Status is each server's state, starting nothing; see
// toolbridge.Bridge.Status.
func (t *Tools) Status() []toolbridge.ServerStatus {
	if t == nil {
		return nil
	}
	return t.bridge.Status()
}

// Servers names the configured servers, sorted.
func (t *Tools) Servers() []string {
	if t == nil {
		return nil
	}
	return t.bridge.Servers()
}
