// Package randomid makes the random ids that name things to whoever holds
// them: a workspace's handle, an MCP session's id, a request's, an
// execution's in the audit trail. Such an id is often all that stands
// between one client and another's workspace, so it comes from
// crypto/rand; its length is the caller's (16 bytes for a capability).
package randomid

import (
	"crypto/rand"
	"encoding/hex"
)

// New is kind (a prefix such as "ws_", or "") followed by n random bytes
// in hex.
func New(kind string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand documents it)
	return kind + hex.EncodeToString(b)
}
