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
		{File{}, child.File{}},
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
	for _, c := range []struct {
		name       string
		ours, them any
	}{
		{"SandboxUID", SandboxUID, child.SandboxUID},
		{"SandboxName", SandboxName, child.SandboxName},
		{"Hostname", Hostname, child.Hostname},
		{"SkillsDir", SkillsDir, child.SkillsDir},
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
