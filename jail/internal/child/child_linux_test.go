package child

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cruciblehq/crucible/seccomp"
)

func TestFilterEncoding(t *testing.T) {
	prog := []seccomp.Instruction{{Code: 0x20, K: 4}, {Code: 0x15, Jt: 1, Jf: 2, K: 0xc000003e}, {Code: 0x06, K: 0x7fff0000}}
	back, err := DecodeFilter(EncodeFilter(prog))
	if err != nil || !slices.Equal(back, prog) {
		t.Fatalf("round trip changed the program (err %v)", err)
	}
	if _, err := DecodeFilter(make([]byte, 7)); err == nil {
		t.Fatal("a truncated program decoded")
	}
}

func TestLookPath(t *testing.T) {
	if p, err := lookPath("sh", "/nonexistent:/usr/bin:/bin"); err != nil || !strings.HasSuffix(p, "/sh") {
		t.Errorf("sh = %q, %v", p, err)
	}
	if _, err := lookPath("no-such-command-here", "/usr/bin"); err == nil {
		t.Error("found a command that does not exist")
	}
	if _, err := lookPath("sh", ""); err == nil {
		t.Error("found a command with no PATH")
	}
	if p, _ := lookPath("./x", ""); p != "./x" {
		t.Errorf("a path with a slash is used as is, got %q", p)
	}
}

func TestEnvValue(t *testing.T) {
	env := []string{"PATH=/a", "PATHX=/x", "P=1", "PATH=/b"}
	if got := envValue(env, "PATH"); got != "/b" {
		t.Errorf("PATH = %q, want the last one, /b", got)
	}
	if got := envValue(env, "PAT"); got != "" {
		t.Errorf("PAT = %q, want none", got)
	}
}

// The spec travels as JSON and then the bytes of its filter and files:
// every field gets there, binary bytes and newlines included, and a
// stream whose lengths do not add up is refused.
func TestSpecEncoding(t *testing.T) {
	s := &Spec{
		Args: []string{"/bin/sh", "-c", "echo\nhi"}, Env: []string{"A=1"}, Dir: "/workspace",
		Files: []File{
			{Path: "/crucible/a", Data: []byte("line\n\x00\xff{\"json\": 1}\n")},
			{Path: "/crucible/empty"},
			{Path: "/crucible/b", Data: []byte("b"), Over: []string{"/etc/b"}},
		},
		Filter:  EncodeFilter([]seccomp.Instruction{{Code: 6, K: 0x7fff0000}, {Code: 0x20, Jt: 1, Jf: 2, K: 4}}),
		TmpSize: 1 << 20, Rootless: true,
	}
	b, err := EncodeSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	want := *s
	want.FilterLen = len(s.Filter)
	want.Files = slices.Clone(s.Files)
	for i := range want.Files {
		want.Files[i].Len = len(want.Files[i].Data)
		if want.Files[i].Data == nil {
			want.Files[i].Data = []byte{}
		}
	}
	if !reflect.DeepEqual(got, &want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", got, &want)
	}
	if s.FilterLen != 0 || s.Files[0].Len != 0 {
		t.Error("EncodeSpec changed the spec it was given")
	}

	bad := map[string][]byte{
		"no newline":        b[:bytes.IndexByte(b, '\n')],
		"data short":        b[:len(b)-1],
		"data left over":    append(slices.Clone(b), 'x'),
		"a negative length": bytes.Replace(b, []byte(`"len":1,`), []byte(`"len":-1,`), 1),
	}
	for name, in := range bad {
		if _, err := DecodeSpec(in); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
