package jsname

import (
	"reflect"
	"testing"
)

func TestTools(t *testing.T) {
	got := Tools([]string{"get-sum", "get_sum", "get.sum", "get_sum", "class", "9lives", "a_2", "a-2", "a.2", "", "ünï", "None"})
	want := map[string]string{
		"get_sum": "get_sum", "get-sum": "get_sum_2", "get.sum": "get_sum_3",
		"class": "_class", "9lives": "_9lives", "None": "_None",
		"a_2": "a_2", "a-2": "a_2_2", "a.2": "a_2_3",
		"": "_", "ünï": "_n_",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Tools = %v\nwant %v", got, want)
	}
}

func TestIdentifier(t *testing.T) {
	for s, ok := range map[string]bool{"x": true, "_": true, "a_2": true, "Get9": true,
		"": false, "9lives": false, "a-b": false, "a.b": false, "ünï": false, "a b": false, "$x": false} {
		if Identifier(s) != ok {
			t.Errorf("Identifier(%q) = %v", s, !ok)
		}
	}
}
