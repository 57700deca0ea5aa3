package secrets_test

import (
	"fmt"
	"io"
	"strings"

	"github.com/cruciblehq/crucible/secrets"
)

// The egress proxy's use of a Set, on one request to a secret's own host
// and its response.
func Example() {
	set, err := secrets.New(map[string][]byte{"API_TOKEN": []byte("tok_live_1234567890abcdef")})
	if err != nil {
		panic(err)
	}
	ph, _ := set.Placeholder("API_TOKEN") // what the jail's environment holds

	// Out: the destination may receive API_TOKEN.
	body := strings.NewReader(`{"token":"` + ph + `"}`)
	fwd := set.ForwardReader(body, []string{"API_TOKEN"})
	sent, _ := io.ReadAll(fwd)
	fmt.Println(string(sent), fwd.Use().Replaced)

	// In: the server echoes the token; the jail gets the placeholder back.
	rev := set.ReverseReader(strings.NewReader(`{"echo":"tok_live_1234567890abcdef"}`))
	got, _ := io.ReadAll(rev)
	fmt.Println(strings.Contains(string(got), ph), rev.Use().Replaced)

	// Elsewhere: the placeholder stays, and is reported.
	_, use := set.Forward([]byte(ph), nil)
	fmt.Println(use.Refused)
	// Output:
	// {"token":"tok_live_1234567890abcdef"} [API_TOKEN]
	// true [API_TOKEN]
	// [API_TOKEN]
}
