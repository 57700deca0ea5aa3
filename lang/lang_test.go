package lang

import (
	"encoding/json"
	"testing"
)

func TestParseOutcome(t *testing.T) {
	o, err := ParseOutcome([]byte(`{"result":{"a":[1,2]}}`))
	if err != nil || string(o.Result) != `{"a":[1,2]}` || o.Error != nil {
		t.Errorf("result: %+v, %v", o, err)
	}
	o, err = ParseOutcome([]byte(`{"error":{"name":"ValueError","message":"boom","stack":"s"}}`))
	if err != nil || o.Error == nil || o.Error.Name != "ValueError" || o.Result != nil {
		t.Errorf("error: %+v, %v", o, err)
	}
	o, err = ParseOutcome(nil)
	if err != nil || o.Result != nil || o.Error != nil {
		t.Errorf("nothing reported: %+v, %v", o, err)
	}
	if _, err := ParseOutcome([]byte(`{"result":1}{"result":2}`)); err == nil {
		t.Error("two objects parsed as one")
	}
}

// What a program writes to fd 3 is hostile: parsing it never panics, and a
// parsed result is valid JSON.
func FuzzParseOutcome(f *testing.F) {
	for _, s := range []string{`{"result":1}`, `{"error":{"name":"E","message":"m"}}`, ``, `{`, `[]`, `{"result":}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := ParseOutcome(b)
		if err != nil {
			return
		}
		if o.Result != nil && !json.Valid(o.Result) {
			t.Fatalf("result %q is not JSON", o.Result)
		}
	})
}
