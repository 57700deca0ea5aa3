package jail

import (
	"reflect"
	"testing"

	"github.com/cruciblehq/crucible/jail/internal/child"
)

// The supervisor's side of the protocol and the child's are separate types
// (package child may import nothing of this one's, or it would initialize
// late): each field must travel under the same JSON name, as the same kind,
// both ways.
func TestWire(t *testing.T) {
	pairs := []struct{ ours, theirs any }{
		{SetupError{}, child.SetupError{}},
	}
	for _, p := range pairs {
		a, b := reflect.TypeOf(p.ours), reflect.TypeOf(p.theirs)
		if a.NumField() != b.NumField() {
			t.Errorf("%v has %d fields, %v %d", a, a.NumField(), b, b.NumField())
			continue
		}
		for i := range a.NumField() {
			fa, fb := a.Field(i), b.Field(i)
			if fa.Name != fb.Name || fa.Tag != fb.Tag || fa.Type.Kind() != fb.Type.Kind() ||
				fa.Type.Kind() != reflect.Pointer && fa.Type.Kind() != reflect.Slice && fa.Type != fb.Type {
				t.Errorf("%v.%s (%v %q) and %v.%s (%v %q) differ", a, fa.Name, fa.Type, fa.Tag, b, fb.Name, fb.Type, fb.Tag)
			}
		}
	}
	// A File travels as child.File, whose Data follows the spec's JSON
	// (child.EncodeSpec): each of its fields must get there.
	f := File{Path: FilesDir + "/a", Data: []byte("data"), Over: []string{"/etc/a"}}
	got := childFiles([]File{f})[0]
	ours, theirs := reflect.ValueOf(f), reflect.ValueOf(got)
	for i := range ours.NumField() {
		name := ours.Type().Field(i).Name
		if v := theirs.FieldByName(name); !v.IsValid() || !reflect.DeepEqual(v.Interface(), ours.Field(i).Interface()) {
			t.Errorf("File.%s did not reach child.File: %+v from %+v", name, got, f)
		}
	}
	for _, c := range []struct {
		name       string
		ours, them any
	}{
		{"SandboxUID", SandboxUID, child.SandboxUID},
		{"SandboxName", SandboxName, child.SandboxName},
		{"Hostname", Hostname, child.Hostname},
		{"ExitSetup", ExitSetup, child.ExitSetup},
		{"MinPids", MinPids, child.MinPids},
		{"LayerLandlock", LayerLandlock, child.LayerLandlock},
		{"LayerSeccompNotify", LayerSeccompNotify, child.LayerSeccompNotify},
		{"LayerPids", LayerPids, child.LayerPids},
		{"LayerMemory", LayerMemory, child.LayerMemory},
		{"LayerUserns", LayerUserns, child.LayerUserns},
	} {
		if c.ours != c.them {
			t.Errorf("%s: %v here, %v in package child", c.name, c.ours, c.them)
		}
	}
}
