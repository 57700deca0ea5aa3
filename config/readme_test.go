package config

import (
	"os"
	"strings"
	"testing"
)

// The crucible.yaml reference (docs/config.md) is a file Parse takes.
func TestReadmeExample(t *testing.T) {
	b, err := os.ReadFile("../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "# `crucible.yaml`")
	if i < 0 {
		t.Fatal("docs/config.md has no crucible.yaml section")
	}
	start := strings.Index(s[i:], "```yaml\n")
	if start < 0 {
		t.Fatal("the crucible.yaml section has no yaml block")
	}
	block := s[i+start+len("```yaml\n"):]
	block = block[:strings.Index(block, "```")]
	if _, err := Parse([]byte(block), "docs/config.md"); err != nil {
		t.Errorf("the reference's example: %v", err)
	}
}
