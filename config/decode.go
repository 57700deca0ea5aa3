package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// Load reads the file at path and parses it with [Parse], naming it by path
// in errors. A missing file is an error that matches [io/fs.ErrNotExist].
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes one YAML document onto [Default] and validates the result.
// name is the file name that errors start with, as in
//
//	crucible.yaml:3: unknown key "memroy" in sandbox
//	crucible.yaml:4: sandbox.memory: "12XB" is not a size (use e.g. 512MiB)
//	crucible.yaml:4: sandbox.pids: must be between 1 and 65536, not 0
//
// Keys left out, and keys written with an empty (null) value, keep their
// defaults; a value that is written replaces the default, lists and maps
// included. An empty file is the defaults. Unknown keys, duplicate keys, more
// than one document, and values of the wrong shape are errors.
func Parse(data []byte, name string) (*Config, error) {
	c := Default()
	d := decoder{name: name, lines: make(map[string]int)}
	if err := d.decode(data, c); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) {
			if line := d.lineOf(fe.path); line > 0 {
				return nil, fmt.Errorf("%s:%d: %w", name, line, err)
			}
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c.Normalize()
	c.src = &source{name: name, lines: d.lines}
	return c, nil
}

// decoder walks the yaml.Node tree itself rather than using
// yaml.Decoder.KnownFields: that way every error has a line and a key path,
// duplicate keys are caught (yaml.v3 checks them only when decoding into Go
// values), and integers are not silently truncated from floats (pids: 1.9).
type decoder struct {
	name  string
	lines map[string]int // key path → line, to place errors from Validate
}

// lineOf is the line of the key at path or, for a key that was left out
// (a required one), of the nearest key that holds it.
func (d *decoder) lineOf(path string) int {
	for path != "" {
		if l := d.lines[path]; l > 0 {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

func (d *decoder) decode(data []byte, c *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case err == io.EOF:
		return nil
	case err != nil:
		return d.syntaxError(err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return d.errorf(&extra, "", "more than one YAML document (remove the --- separator)")
	case err != io.EOF:
		return d.syntaxError(err)
	}
	if len(doc.Content) == 0 {
		return nil
	}
	return d.value(doc.Content[0], reflect.ValueOf(c).Elem(), "")
}

// Compiled on first use, not by every process of the binary at its start.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`) })

// syntaxError rewrites "yaml: line 3: ..." as "name:3: ...".
func (d *decoder) syntaxError(err error) error {
	msg := strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s:%s: %s", d.name, m[1], m[2])
	}
	return fmt.Errorf("%s: %s", d.name, strings.TrimPrefix(msg, "yaml: "))
}

// errorf returns "name:line: path: msg", or "name:line: msg" at the top level.
func (d *decoder) errorf(n *yaml.Node, path, format string, args ...any) error {
	if path != "" {
		format = path + ": " + format
	}
	return fmt.Errorf("%s:%d: %s", d.name, n.Line, fmt.Sprintf(format, args...))
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// value decodes n into v, whose key path is path. The walk is bounded by the
// depth of the Go types, so aliases cannot make it loop or blow up: an alias
// is followed only where the schema expects a value, and leaves are scalars.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) error {
	at := n // errors point to where the value is written, even via an alias
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // "key:" with nothing after it: keep the default
	}
	if reflect.PointerTo(v.Type()).Implements(textUnmarshaler) {
		if n.Kind != yaml.ScalarNode {
			return d.errorf(at, path, "must be a single value, not %s", describe(n))
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			return d.errorf(at, path, "%v", err)
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		return d.mapping(at, n, path, func(k, val *yaml.Node) error {
			i := fieldIndex(v.Type(), k.Value)
			if i < 0 {
				if path == "" {
					return d.errorf(k, "", "unknown key %s", quote(k.Value))
				}
				return d.errorf(k, "", "unknown key %s in %s", quote(k.Value), path)
			}
			child := k.Value
			if path != "" {
				child = path + "." + k.Value
			}
			d.lines[child] = k.Line
			return d.value(val, v.Field(i), child)
		})
	case reflect.Map:
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		err := d.mapping(at, n, path, func(k, val *yaml.Node) error {
			child := mapPath(path, k.Value)
			d.lines[child] = k.Line
			e := reflect.New(v.Type().Elem()).Elem()
			if err := d.value(val, e, child); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(k.Value).Convert(v.Type().Key()), e)
			return nil
		})
		if err == nil {
			v.Set(m)
		}
		return err
	case reflect.Pointer:
		// An optional section: set once written, even as {}.
		e := reflect.New(v.Type().Elem())
		if err := d.value(at, e.Elem(), path); err != nil {
			return err
		}
		v.Set(e)
		return nil
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errorf(at, path, "must be a list, not %s", describe(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, e := range n.Content {
			child := fmt.Sprintf("%s[%d]", path, i)
			d.lines[child] = e.Line
			if err := d.value(e, s.Index(i), child); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.String, reflect.Int, reflect.Bool, reflect.Float64:
		return d.scalar(at, n, v, path)
	}
	// A field of a type added to the schema without a case above; the tests
	// decode every field, so this is found before it ships.
	panic("config: cannot decode into " + v.Type().String())
}

// scalar decodes the scalar n into v, a string, int, bool or float64.
func (d *decoder) scalar(at, n *yaml.Node, v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return d.errorf(at, path, "must be a string, not %s", describe(n))
		}
		v.SetString(n.Value)
		return nil
	case reflect.Int:
		i, err := strconv.ParseInt(n.Value, 10, 0)
		if n.Kind != yaml.ScalarNode || err != nil {
			return d.errorf(at, path, "must be an integer, not %s", describe(n))
		}
		v.SetInt(i)
		return nil
	case reflect.Bool:
		// Only true and false: yes/no/on/off are YAML 1.1 guesses.
		if n.Kind != yaml.ScalarNode || (n.Value != "true" && n.Value != "false") {
			return d.errorf(at, path, "must be true or false, not %s", describe(n))
		}
		v.SetBool(n.Value == "true")
		return nil
	case reflect.Float64:
		f, err := strconv.ParseFloat(n.Value, 64)
		if n.Kind != yaml.ScalarNode || err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return d.errorf(at, path, "must be a number, not %s", describe(n))
		}
		v.SetFloat(f)
		return nil
	}
	return nil
}

// mapping calls f with each key and value of the mapping n, after checking
// that the key is a scalar and has not been seen before.
func (d *decoder) mapping(at, n *yaml.Node, path string, f func(k, v *yaml.Node) error) error {
	if n.Kind != yaml.MappingNode {
		if path == "" {
			return d.errorf(at, "", "the file must be a mapping of sections such as \"sandbox:\", not %s", describe(n))
		}
		return d.errorf(at, path, "must be a mapping, not %s", describe(n))
	}
	in := ""
	if path != "" {
		in = " in " + path
	}
	seen := make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return d.errorf(k, "", "a key%s is %s, not a string", in, describe(k))
		}
		if first, dup := seen[k.Value]; dup {
			return d.errorf(k, "", "duplicate key %s%s (first on line %d)", quote(k.Value), in, first)
		}
		seen[k.Value] = k.Line
		if err := f(k, v); err != nil {
			return err
		}
	}
	return nil
}

// fieldIndex returns the index of the field of struct type t whose yaml tag
// is key, or -1.
func fieldIndex(t reflect.Type, key string) int {
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == key && name != "" && name != "-" {
			return i
		}
	}
	return -1
}

// describe names what n is, for "must be X, not Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	return quote(n.Value)
}
