package userns

import (
	"slices"
	"testing"
)

func TestParseMap(t *testing.T) {
	m, err := parseMap([]byte("         0       1000          1\n         1     100000      65536\n"))
	if err != nil || !slices.Equal(m, Map{{0, 1000, 1}, {1, 100000, 65536}}) {
		t.Fatalf("%v, %v", m, err)
	}
	for _, c := range []struct {
		id  uint32
		out uint32
		ok  bool
	}{{0, 1000, true}, {1, 100000, true}, {65536, 165535, true}, {65537, 0, false}} {
		out, ok := m.Outside(c.id)
		if out != c.out || ok != c.ok || m.Mapped(c.id) != c.ok {
			t.Errorf("Outside(%d) = %d, %v; want %d, %v", c.id, out, ok, c.out, c.ok)
		}
	}
	if m.Initial() {
		t.Error("a user's map read as the host's")
	}
	if m, _ := parseMap([]byte("0 0 4294967295\n")); !m.Initial() {
		t.Error("the host's map not read as the host's")
	}
	for _, bad := range []string{"0 0\n", "0 x 1\n", "0 0 99999999999\n"} {
		if _, err := parseMap([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestSubordinate(t *testing.T) {
	file := []byte("# comment\nalice:100000:65536\nbob:200000:500\n1002:300000:65536\nbob:400000:65536\n")
	for _, c := range []struct {
		name string
		id   int
		want Subordinate
		ok   bool
	}{
		{"alice", 1000, Subordinate{100000, 65536}, true},
		{"bob", 1001, Subordinate{400000, 65536}, true}, // the first range is too small
		{"", 1002, Subordinate{300000, 65536}, true},    // by uid
		{"carol", 1003, Subordinate{}, false},
		{"", 0, Subordinate{}, false},
	} {
		got, ok := subordinate(file, c.name, c.id, MinRange)
		if got != c.want || ok != c.ok {
			t.Errorf("%s/%d: %v, %v; want %v, %v", c.name, c.id, got, ok, c.want, c.ok)
		}
	}
}

func TestNameOf(t *testing.T) {
	if n := nameOf("/etc/passwd", 0); n != "root" {
		t.Errorf("uid 0 is %q", n)
	}
	if n := nameOf("/etc/passwd", 1<<30); n != "" {
		t.Errorf("an unknown uid is %q", n)
	}
}
