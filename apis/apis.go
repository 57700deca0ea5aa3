// Package apis is the catalog of a configuration's HTTP APIs, as the model
// and the code discover them: each API's description, base URLs, how to
// authenticate with its secrets, and the operations (of an OpenAPI file) or
// sections (of a Markdown file) of its docs, ranked against a query and
// rendered at the detail asked for.
//
// It describes; it does not enforce. What a request may do is decided by
// the network (egress, httprule), from the same configuration.
//
// Nothing it returns names the docs file: its path, and errors about it,
// could reach the model. An error names the setting (apis["NAME"].docs).
package apis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/terms"
)

// MaxDocs bounds a docs file: a larger one is refused when the catalog
// loads. It leaves room for the largest public OpenAPI descriptions while
// bounding what one setting can make Crucible hold.
const MaxDocs = 16 << 20

// Catalog is the APIs of one configuration, read once. A nil *Catalog is
// an empty one. It is safe for concurrent use: nothing changes it.
type Catalog struct {
	apis []*api // by name
}

// api is one API with its docs digested.
type api struct {
	name        string
	description string
	hosts       []string
	rules       []string
	docs        string // "openapi", "markdown" or ""
	baseURLs    []string
	auth        []Auth
	entries     []*Entry

	words *terms.Fields // name, description, hosts
}

// Entry is what a query can find in an API's docs: an operation of an
// OpenAPI file, or a section of a Markdown one.
type Entry struct {
	Method      string   `json:"method,omitempty"`
	Path        string   `json:"path,omitempty"`
	OperationID string   `json:"operation_id,omitempty"`
	Summary     string   `json:"summary,omitempty"`
	Parameters  []string `json:"parameters,omitempty"`
	Section     string   `json:"section,omitempty"` // a Markdown section's heading

	detail string // what full detail shows of it, bounded
	words  *terms.Fields
}

// Auth is how the code authenticates with one of an API's secrets.
type Auth struct {
	// Secret is the secret's name, which is also the environment
	// variable that holds its placeholder in the jail.
	Secret string `json:"secret"`
	// Header is the header to send, e.g. "Authorization: Bearer
	// ${env.GITHUB_TOKEN}"; Query, instead, a query parameter.
	Header string `json:"header,omitempty"`
	Query  string `json:"query,omitempty"`
}

// Info is an API as tools.apis() and `crucible tools --apis` list it.
type Info struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Hosts       []string `json:"hosts"`
	BaseURLs    []string `json:"base_urls"`
	Auth        []Auth   `json:"auth"`
	Rules       []string `json:"rules,omitempty"` // "allow GET /repos/**", in order
	Docs        string   `json:"docs,omitempty"`  // "openapi" or "markdown"
	Operations  int      `json:"operations"`
	Sections    int      `json:"sections,omitempty"`
	// Matches are the operations or sections a query found, best first
	// (Find only).
	Matches []*Entry `json:"matches,omitempty"`
}

// Load reads the docs of cfg's APIs, once. Without APIs it returns nil.
func Load(cfg *config.Config) (*Catalog, error) {
	if len(cfg.APIs) == 0 {
		return nil, nil
	}
	c := &Catalog{}
	for _, name := range slices.Sorted(maps.Keys(cfg.APIs)) {
		a, err := load(name, cfg.APIs[name])
		if err != nil {
			return nil, err
		}
		c.apis = append(c.apis, a)
	}
	return c, nil
}

func load(name string, conf config.API) (*api, error) {
	a := &api{name: name, description: strings.TrimSpace(conf.Description), hosts: slices.Clone(conf.Hosts)}
	for _, r := range conf.Rules {
		if r.Allow != "" {
			a.rules = append(a.rules, "allow "+r.Allow)
		} else {
			a.rules = append(a.rules, "deny "+r.Deny)
		}
	}
	var d *digest
	if conf.Docs != "" {
		b, err := readDocs(conf.Docs)
		if err == nil {
			d, err = parseDocs(conf.Docs, b)
		}
		if err != nil {
			return nil, fmt.Errorf("apis[%q].docs: %w", name, err)
		}
		a.docs, a.entries = d.kind, d.entries
	}
	base := ""
	var schemes []scheme
	if d != nil {
		base, schemes = d.basePath, d.schemes
	}
	for _, h := range conf.Hosts {
		a.baseURLs = append(a.baseURLs, baseURL(h)+base)
	}
	for _, s := range conf.Secrets {
		a.auth = append(a.auth, authFor(s, schemes))
	}
	a.words = terms.NewFields(apiWeights, a.name, a.description, strings.Join(a.hosts, " "))
	return a, nil
}

// readDocs reads a docs file, at most MaxDocs of it. Its errors never say
// the path: os's would.
func readDocs(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, fileError(err)
	} else if !st.Mode().IsRegular() {
		return nil, errors.New("is not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxDocs+1))
	if err != nil {
		return nil, fileError(err)
	}
	if len(b) > MaxDocs {
		return nil, fmt.Errorf("is larger than %d MiB", MaxDocs>>20)
	}
	return b, nil
}

func fileError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("the file does not exist")
	case errors.Is(err, fs.ErrPermission):
		return errors.New("the file cannot be read: permission denied")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("the file cannot be read: %w", pe.Err)
	}
	return errors.New("the file cannot be read")
}

// baseURL turns a host rule into the URL the API is at: https, unless the
// rule names port 80.
func baseURL(rule string) string {
	host, port := rule, ""
	if i := strings.LastIndexByte(rule, ':'); i >= 0 && !strings.HasSuffix(rule, "]") {
		host, port = rule[:i], rule[i+1:]
	}
	switch port {
	case "":
		return "https://" + host
	case "80":
		return "http://" + host
	case "443":
		return "https://" + host
	}
	return "https://" + host + ":" + port
}

// List lists the APIs, by name.
func (c *Catalog) List() []Info {
	out := []Info{}
	if c == nil {
		return out
	}
	for _, a := range c.apis {
		out = append(out, a.info())
	}
	return out
}

// Find lists the APIs that query matches, best first, each with the
// operations or sections it found (at most terms.MaxHits in all). Its errors
// are Search's.
func (c *Catalog) Find(ctx context.Context, query string) ([]Info, error) {
	hits, err := c.Search(ctx, query)
	if err != nil {
		return nil, err
	}
	out := []Info{}
	at := map[string]int{}
	for _, h := range hits {
		i, ok := at[h.API]
		if !ok {
			i = len(out)
			at[h.API] = i
			out = append(out, c.byName(h.API).info())
		}
		if h.Entry != nil {
			out[i].Matches = append(out[i].Matches, h.Entry)
		}
	}
	return out, nil
}

func (c *Catalog) byName(name string) *api {
	for _, a := range c.apis {
		if a.name == name {
			return a
		}
	}
	return nil
}

func (a *api) info() Info {
	i := Info{
		Name: a.name, Description: a.description,
		Hosts: slices.Clone(a.hosts), BaseURLs: slices.Clone(a.baseURLs),
		Auth: slices.Clone(a.auth), Rules: slices.Clone(a.rules), Docs: a.docs,
	}
	if i.Auth == nil {
		i.Auth = []Auth{}
	}
	if a.docs == "markdown" {
		i.Sections = len(a.entries)
	} else {
		i.Operations = len(a.entries)
	}
	return i
}
