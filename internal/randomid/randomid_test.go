package randomid

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	a, b := New("ws_", 16), New("ws_", 16)
	if a == b || !strings.HasPrefix(a, "ws_") || len(a) != 3+32 {
		t.Errorf("New: %q, %q", a, b)
	}
	if _, err := hex.DecodeString(strings.TrimPrefix(a, "ws_")); err != nil {
		t.Errorf("New(%q): not hex: %v", a, err)
	}
	if got := New("", 8); len(got) != 16 {
		t.Errorf("New(\"\", 8) = %q", got)
	}
}
