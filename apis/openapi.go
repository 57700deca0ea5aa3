package apis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/cruciblehq/crucible/internal/terms"
	"go.yaml.in/yaml/v3"
)

// digest is what an API keeps of its docs.
type digest struct {
	kind     string // "openapi" or "markdown"
	entries  []*Entry
	basePath string   // the path the operations' paths are under, from the docs' server
	schemes  []scheme // how the docs say to authenticate, preferred first
}

// scheme is a way to send a credential that the code can use with a
// placeholder: as a bearer token, or verbatim in a header or the query.
type scheme struct {
	in   string // "bearer", "header" or "query"
	name string // the header's or the parameter's name
}

// parseDocs digests a docs file: OpenAPI (3.x, or Swagger 2.0) in JSON or
// YAML, or Markdown. The name only says which it should be.
func parseDocs(name string, b []byte) (*digest, error) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown", ".txt":
		return parseMarkdown(b), nil
	case ".json", ".yaml", ".yml":
		return parseOpenAPI(b)
	}
	if d, err := parseOpenAPI(b); err == nil {
		return d, nil
	}
	return parseMarkdown(b), nil
}

// The parts of an OpenAPI (or Swagger) document that a search or a
// reader needs; the rest is left undecoded.
type (
	document struct {
		OpenAPI  string `json:"openapi" yaml:"openapi"`
		Swagger  string `json:"swagger" yaml:"swagger"`
		BasePath string `json:"basePath" yaml:"basePath"`
		Servers  []struct {
			URL string `json:"url" yaml:"url"`
		} `json:"servers" yaml:"servers"`
		Paths      map[string]*pathItem `json:"paths" yaml:"paths"`
		Components struct {
			Parameters      map[string]*parameter `json:"parameters" yaml:"parameters"`
			Schemas         map[string]*schema    `json:"schemas" yaml:"schemas"`
			SecuritySchemes map[string]*secScheme `json:"securitySchemes" yaml:"securitySchemes"`
		} `json:"components" yaml:"components"`
		Parameters          map[string]*parameter `json:"parameters" yaml:"parameters"`   // 2.0
		Definitions         map[string]*schema    `json:"definitions" yaml:"definitions"` // 2.0
		SecurityDefinitions map[string]*secScheme `json:"securityDefinitions" yaml:"securityDefinitions"`
		Security            []map[string]any      `json:"security" yaml:"security"`
	}
	pathItem struct {
		Get        *operation   `json:"get" yaml:"get"`
		Put        *operation   `json:"put" yaml:"put"`
		Post       *operation   `json:"post" yaml:"post"`
		Delete     *operation   `json:"delete" yaml:"delete"`
		Options    *operation   `json:"options" yaml:"options"`
		Head       *operation   `json:"head" yaml:"head"`
		Patch      *operation   `json:"patch" yaml:"patch"`
		Trace      *operation   `json:"trace" yaml:"trace"`
		Parameters []*parameter `json:"parameters" yaml:"parameters"`
	}
	operation struct {
		OperationID string       `json:"operationId" yaml:"operationId"`
		Summary     string       `json:"summary" yaml:"summary"`
		Description string       `json:"description" yaml:"description"`
		Deprecated  bool         `json:"deprecated" yaml:"deprecated"`
		Parameters  []*parameter `json:"parameters" yaml:"parameters"`
		RequestBody *struct {
			Ref      string `json:"$ref" yaml:"$ref"`
			Required bool   `json:"required" yaml:"required"`
			Content  map[string]struct {
				Schema *schema `json:"schema" yaml:"schema"`
			} `json:"content" yaml:"content"`
		} `json:"requestBody" yaml:"requestBody"`
	}
	parameter struct {
		Ref         string  `json:"$ref" yaml:"$ref"`
		Name        string  `json:"name" yaml:"name"`
		In          string  `json:"in" yaml:"in"`
		Description string  `json:"description" yaml:"description"`
		Required    bool    `json:"required" yaml:"required"`
		Type        any     `json:"type" yaml:"type"` // 2.0
		Schema      *schema `json:"schema" yaml:"schema"`
	}
	schema struct {
		Ref        string             `json:"$ref" yaml:"$ref"`
		Type       any                `json:"type" yaml:"type"` // a string, or a list in 3.1
		Required   []string           `json:"required" yaml:"required"`
		Properties map[string]*schema `json:"properties" yaml:"properties"`
	}
	secScheme struct {
		Type   string `json:"type" yaml:"type"`
		Scheme string `json:"scheme" yaml:"scheme"`
		In     string `json:"in" yaml:"in"`
		Name   string `json:"name" yaml:"name"`
	}
)

// Compiled on first use, not by every process of the binary at its start.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`line (\d+)`) })

// parseOpenAPI digests an OpenAPI 3.x or Swagger 2.0 document. Its errors
// say where, never what the file holds.
func parseOpenAPI(b []byte) (*digest, error) {
	var doc document
	if t := bytes.TrimLeft(b, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '{' {
		// A value of an unexpected type is skipped, the rest decoded.
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if err := json.Unmarshal(t, &doc); errors.As(err, &se) {
			return nil, fmt.Errorf("is not valid JSON (at byte %d)", se.Offset)
		} else if err != nil && !errors.As(err, &te) {
			return nil, errors.New("is not valid JSON")
		}
	} else {
		var te *yaml.TypeError
		if err := yaml.Unmarshal(b, &doc); err != nil && !errors.As(err, &te) {
			if m := yamlLine().FindStringSubmatch(err.Error()); m != nil {
				return nil, fmt.Errorf("is not valid YAML (line %s)", m[1])
			}
			return nil, errors.New("is not valid YAML or JSON")
		}
	}
	switch {
	case strings.HasPrefix(doc.OpenAPI, "3."):
	case doc.Swagger == "2.0":
		doc.Components.Parameters, doc.Components.Schemas = doc.Parameters, doc.Definitions
		doc.Components.SecuritySchemes = doc.SecurityDefinitions
	default:
		return nil, errors.New("is neither OpenAPI 3 nor Swagger 2.0 (no openapi: 3.x or swagger: \"2.0\" field), nor a Markdown file (.md)")
	}
	d := &digest{kind: "openapi", basePath: doc.basePath(), schemes: doc.schemes()}
	for _, p := range slices.Sorted(maps.Keys(doc.Paths)) {
		item := doc.Paths[p]
		if item == nil {
			continue
		}
		for _, m := range []struct {
			method string
			op     *operation
		}{
			{"GET", item.Get}, {"POST", item.Post}, {"PUT", item.Put}, {"PATCH", item.Patch},
			{"DELETE", item.Delete}, {"HEAD", item.Head}, {"OPTIONS", item.Options}, {"TRACE", item.Trace},
		} {
			if m.op != nil {
				d.entries = append(d.entries, doc.entry(m.method, p, m.op, item.Parameters))
			}
		}
	}
	return d, nil
}

// basePath is the path part of the first server's URL (2.0: basePath):
// the operations' paths are under it. Only the path: where the API is,
// the configuration's hosts say.
func (doc *document) basePath() string {
	p := doc.BasePath
	if len(doc.Servers) > 0 {
		p = doc.Servers[0].URL
		if _, rest, ok := strings.Cut(p, "://"); ok {
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				p = rest[i:]
			} else {
				p = ""
			}
		}
	}
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "{} ") {
		return ""
	}
	return strings.TrimRight(p, "/")
}

// schemes are the docs' ways to authenticate that a placeholder can take
// part in, those the document's security names first.
func (doc *document) schemes() []scheme {
	all := doc.Components.SecuritySchemes
	var names []string
	for _, req := range doc.Security {
		names = append(names, slices.Sorted(maps.Keys(req))...)
	}
	names = append(names, slices.Sorted(maps.Keys(all))...)
	var out []scheme
	for _, n := range names {
		s := all[n]
		if s == nil {
			continue
		}
		var sc scheme
		switch {
		case s.Type == "http" && strings.EqualFold(s.Scheme, "bearer"), s.Type == "oauth2", s.Type == "openIdConnect":
			sc = scheme{in: "bearer"}
		case s.Type == "apiKey" && s.In == "header" && s.Name != "":
			sc = scheme{in: "header", name: s.Name}
		case s.Type == "apiKey" && s.In == "query" && s.Name != "":
			sc = scheme{in: "query", name: s.Name}
		default:
			continue // basic: the value goes out in base64, which no placeholder survives
		}
		if !slices.Contains(out, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// authFor says how to send secret: the docs' first usable way, else as a
// bearer token.
func authFor(secret string, schemes []scheme) Auth {
	ref := "${env." + secret + "}"
	s := scheme{in: "bearer"}
	if len(schemes) > 0 {
		s = schemes[0]
	}
	switch s.in {
	case "header":
		return Auth{Secret: secret, Header: s.name + ": " + ref}
	case "query":
		return Auth{Secret: secret, Query: s.name + "=" + ref}
	}
	return Auth{Secret: secret, Header: "Authorization: Bearer " + ref}
}

// maxDetail bounds what full detail shows of one operation.
const maxDetail = 4 << 10

func (doc *document) entry(method, path string, op *operation, shared []*parameter) *Entry {
	e := &Entry{Method: method, Path: path, OperationID: op.OperationID, Summary: oneLine(op.Summary)}
	desc := strings.TrimSpace(op.Description)
	if e.Summary == "" {
		e.Summary = oneLine(desc)
	}
	// An operation's parameter overrides the path's of the same name and place.
	var params []*parameter
	seen := map[[2]string]bool{}
	for _, list := range [][]*parameter{op.Parameters, shared} {
		for _, p := range list {
			if p = doc.param(p); p != nil && !seen[[2]string{p.Name, p.In}] {
				seen[[2]string{p.Name, p.In}] = true
				params = append(params, p)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", method, path)
	if e.OperationID != "" {
		fmt.Fprintf(&b, " (operationId %s)", e.OperationID)
	}
	if op.Deprecated {
		b.WriteString(" [deprecated]")
	}
	b.WriteByte('\n')
	if op.Summary != "" {
		b.WriteString(e.Summary + "\n")
	}
	if desc != "" && desc != e.Summary {
		b.WriteString(clip(desc, 1500) + "\n")
	}
	var body []string
	for _, p := range params {
		if p.In == "body" { // 2.0
			body = append(body, doc.fields("application/json", p.Schema))
			continue
		}
		e.Parameters = append(e.Parameters, p.Name)
		if len(e.Parameters) == 1 {
			b.WriteString("Parameters:\n")
		}
		fmt.Fprintf(&b, "  %s (%s", p.Name, p.In)
		if p.Required {
			b.WriteString(", required")
		}
		t := typeName(p.Type)
		if p.Schema != nil {
			t = typeName(doc.resolve(p.Schema).Type)
		}
		if t != "" {
			b.WriteString(", " + t)
		}
		b.WriteString(")")
		if d := oneLine(p.Description); d != "" {
			b.WriteString(": " + d)
		}
		b.WriteByte('\n')
	}
	if rb := op.RequestBody; rb != nil {
		for _, ct := range slices.Sorted(maps.Keys(rb.Content)) {
			body = append(body, doc.fields(ct, rb.Content[ct].Schema))
		}
	}
	for _, s := range body {
		b.WriteString("Request body " + s + "\n")
	}
	e.detail = clip(b.String(), maxDetail)
	e.words = terms.NewFields(operationWeights, e.OperationID, e.Summary, e.Path, e.Method, strings.Join(e.Parameters, " "), oneLine(desc))
	return e
}

// fields describes a request body: its content type and top-level fields.
func (doc *document) fields(contentType string, s *schema) string {
	s = doc.resolve(s)
	if s == nil || len(s.Properties) == 0 {
		if t := typeName(s.typ()); t != "" {
			return "(" + contentType + "): " + t
		}
		return "(" + contentType + ")"
	}
	var fs []string
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		f := name
		if t := typeName(doc.resolve(s.Properties[name]).typ()); t != "" {
			f += ": " + t
		}
		if slices.Contains(s.Required, name) {
			f += " (required)"
		}
		fs = append(fs, f)
	}
	return "(" + contentType + "): {" + strings.Join(fs, ", ") + "}"
}

func (s *schema) typ() any {
	if s == nil {
		return nil
	}
	return s.Type
}

// param resolves a parameter's local $ref.
func (doc *document) param(p *parameter) *parameter {
	for range 4 { // a chain of refs, not a loop of them
		if p == nil || p.Ref == "" {
			break
		}
		name, ok := refName(p.Ref, "#/components/parameters/", "#/parameters/")
		if !ok {
			return nil
		}
		p = doc.Components.Parameters[name]
	}
	if p == nil || p.Ref != "" || p.Name == "" {
		return nil
	}
	return p
}

// resolve follows a schema's local $ref.
func (doc *document) resolve(s *schema) *schema {
	for range 4 {
		if s == nil || s.Ref == "" {
			return s
		}
		name, ok := refName(s.Ref, "#/components/schemas/", "#/definitions/")
		if !ok {
			return nil
		}
		s = doc.Components.Schemas[name]
	}
	return s
}

func refName(ref string, prefixes ...string) (string, bool) {
	for _, p := range prefixes {
		if name, ok := strings.CutPrefix(ref, p); ok {
			return strings.NewReplacer("~1", "/", "~0", "~").Replace(name), true
		}
	}
	return "", false
}

// typeName is a schema's type as written: "string", or "string|null" for
// a list.
func typeName(t any) string {
	switch t := t.(type) {
	case string:
		return t
	case []any:
		var s []string
		for _, x := range t {
			if x, ok := x.(string); ok {
				s = append(s, x)
			}
		}
		return strings.Join(s, "|")
	}
	return ""
}

// oneLine is the first line of s, at most 200 bytes.
func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return clip(strings.TrimSpace(s), 200)
}

// clip cuts s to at most n bytes (on a character boundary), saying so.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
