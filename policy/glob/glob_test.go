package glob

import "testing"

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"*", "admin/delete_repo", true}, // path.Match said false: the hole
		{"delete_*", "delete_/x", true},
		{"*/delete_*", "github/delete_repo", true},
		{"delete_*", "Delete_repo", false},
		{"get_?", "get_a", true},
		{"get_?", "get_ab", false},
		{"get_?", "get_é", true}, // one character, not one byte
		{"[a-c]*", "b_tool", true},
		{"[a-c]*", "d_tool", false},
		{"[!a-c]*", "d_tool", true},
		{"[^a-c]*", "a_tool", false},
		{"[]x]", "]", true},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{"a.b", "axb", false}, // '.' is itself
		{"file:///data/*", "file:///data/a/b.txt", true},
		{"file:///data/*", "file:///etc/passwd", false},
		{"x", "x\n", false}, // the whole name
		{"*", "", true},
	} {
		g, err := Compile(c.pattern)
		if err != nil {
			t.Errorf("%q: %v", c.pattern, err)
			continue
		}
		if got := g.Match(c.name); got != c.want {
			t.Errorf("%q matches %q: %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
	for _, bad := range []string{"", "[a-", "[]", `a\`, "[z-a]", "\xff"} {
		if _, err := Compile(bad); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}

func TestClean(t *testing.T) {
	for name, want := range map[string]bool{
		"create_issue": true, "admin/delete_repo": true, "get-file.v2": true,
		"": false, "dеlete_repo": false /* Cyrillic е */, "delete\u200d_repo": false, "a b": false, "a\tb": false, "a\x00": false, "\xff": false,
	} {
		if got := Clean(name); got != want {
			t.Errorf("Clean(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestSet(t *testing.T) {
	s, err := CompileAll([]string{"get_*", "*/admin_*"})
	if err != nil {
		t.Fatal(err)
	}
	if g := s.Match("x/admin_y"); g == nil || g.String() != "*/admin_*" {
		t.Errorf("Match: %v", g)
	}
	if s.Match("put_x") != nil {
		t.Error("put_x matched")
	}
	if _, err := CompileAll([]string{"ok", "[x"}); err == nil || err.Error() != `pattern "[x" is a '[' with no ']'` {
		t.Errorf("CompileAll: %v", err)
	}
}
