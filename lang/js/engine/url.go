package engine

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/cruciblehq/crucible/lang/js/engine/whatwgurl"
)

// urlParts are a URL's attributes as the URL class shows them, or the
// message of the TypeError it throws.
type urlParts struct {
	Href     string `json:"href"`
	Origin   string `json:"origin"`
	Protocol string `json:"protocol"`
	Username string `json:"username"`
	Password string `json:"password"`
	Host     string `json:"host"`
	Hostname string `json:"hostname"`
	Port     string `json:"port"`
	Pathname string `json:"pathname"`
	Search   string `json:"search"`
	Hash     string `json:"hash"`
	Error    string `json:"error,omitempty"`
}

var urlSetters = map[string]func(*whatwgurl.URL, string){
	"protocol": (*whatwgurl.URL).SetProtocol,
	"username": (*whatwgurl.URL).SetUsername,
	"password": (*whatwgurl.URL).SetPassword,
	"host":     (*whatwgurl.URL).SetHost,
	"hostname": (*whatwgurl.URL).SetHostname,
	"port":     (*whatwgurl.URL).SetPort,
	"pathname": (*whatwgurl.URL).SetPathname,
	"search":   (*whatwgurl.URL).SetSearch,
	"hash":     (*whatwgurl.URL).SetHash,
}

// urlCall serves the prelude's URL class, which keeps the attributes it
// returns as JSON. url(input) and url(input, base) parse, as the
// constructor does; url(href, null, name, value) runs the setter name on
// the URL that href is. Parsing the href again loses nothing: the URL
// Standard makes a URL's serialization parse back to the same URL.
func urlCall(a []any) string {
	input := argString(a, 0)
	var base *whatwgurl.URL
	if b, ok := arg(a, 1).(string); ok {
		var err error
		if base, err = whatwgurl.Parse(b, nil); err != nil {
			return urlError("Invalid base URL", b, err)
		}
	}
	u, err := whatwgurl.Parse(input, base)
	if err != nil {
		return urlError("Invalid URL", input, err)
	}
	if name, ok := arg(a, 2).(string); ok {
		if set := urlSetters[name]; set != nil {
			set(u, argString(a, 3))
		}
	}
	b, _ := json.Marshal(urlParts{
		Href: u.Href(), Origin: u.Origin(), Protocol: u.Protocol(),
		Username: u.Username(), Password: u.Password(),
		Host: u.Host(), Hostname: u.Hostname(), Port: u.Port(),
		Pathname: u.Pathname(), Search: u.Search(), Hash: u.Hash(),
	})
	return string(b)
}

func urlError(what, input string, err error) string {
	msg := what + " " + strconv.Quote(shorten(input))
	if e := (*whatwgurl.Error)(nil); errors.As(err, &e) {
		msg += ": " + e.Reason
	}
	b, _ := json.Marshal(urlParts{Error: msg})
	return string(b)
}
