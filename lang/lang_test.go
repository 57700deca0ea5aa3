package lang

import "testing"

func TestDetect(t *testing.T) {
	for _, tc := range []struct{ flag, file, want string }{
		{"", "a.py", Python},
		{"", "a.PY", Python},
		{"", "a.js", JavaScript},
		{"", "a.mjs", JavaScript},
		{"", "a.ts", TypeScript},
		{"", "-", TypeScript},
		{"", "noext", TypeScript},
		{"deno", "a.py", Deno},
		{"py", "a.ts", Python},
	} {
		got, err := Detect(tc.flag, tc.file)
		if err != nil || got != tc.want {
			t.Errorf("Detect(%q, %q) = %q, %v; want %q", tc.flag, tc.file, got, err, tc.want)
		}
	}
	if _, err := Detect("ruby", "a.rb"); err == nil {
		t.Error("an unknown language was accepted")
	}
}

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
