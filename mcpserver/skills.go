package mcpserver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/audit"
)

// Skills are the operator's reusable programs: the files of serve.skills,
// read-only at /skills in every jail, importable there
// (`import { f } from "/skills/NAME.ts"`, Python's `import NAME`), each
// listed as the resource skill://NAME. With serve.skills_writable, the
// tools save_skill and delete_skill change them.

// skillName is a skill's file name: a short lowercase name and the
// extension of its language. Compiled on first use: a {0,63} repeat is
// ~100 KB of program, and every process of this binary would otherwise pay
// for it at start.
const skillNamePattern = `^[a-z][a-z0-9_]{0,63}\.(ts|js|py)$`

var skillName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(skillNamePattern) })

// maxSkill bounds one skill's source.
const maxSkill = 256 << 10

// skillURI is the resource URI of the skill named name.
func skillURI(name string) string { return "skill://" + name }

// listSkills names the skills in dir, sorted: the files whose names are
// skill names (others are left alone: a helper module of a skill may sit
// in a subdirectory).
func listSkills(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if e.Type().IsRegular() && skillName().MatchString(e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// skillDescription is a skill's first comment line, its description.
func skillDescription(src []byte) string {
	line, _, _ := bytes.Cut(src, []byte("\n"))
	for _, p := range []string{"//", "#"} {
		if d, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte(p)); ok {
			return strings.TrimSpace(string(d))
		}
	}
	return ""
}

// readSkill reads skill name of dir, not following a link at its name.
func readSkill(dir, name string) ([]byte, error) {
	if !skillName().MatchString(name) {
		return nil, fmt.Errorf("%q is not a skill name", truncate(name, 80))
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, skillError(name, "read", err)
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(io.LimitReader(f, maxSkill+1)); err != nil {
		return nil, fmt.Errorf("reading skill %q: %w", name, err)
	}
	if b.Len() > maxSkill {
		return nil, fmt.Errorf("skill %q is larger than %d KiB", name, maxSkill>>10)
	}
	return b.Bytes(), nil
}

// addSkills lists the skills as resources of srv, and, when writable,
// offers the tools that change them.
func (s *Server) addSkills(v *view, srv *mcp.Server) error {
	dir := v.cfg.Serve.Skills
	names, err := listSkills(dir)
	if err != nil {
		return fmt.Errorf("serve.skills: %w", err)
	}
	for _, n := range names {
		src, err := readSkill(dir, n)
		if err != nil {
			return fmt.Errorf("serve.skills: %w", err)
		}
		s.addSkillResource(dir, srv, n, skillDescription(src))
	}
	if v.cfg.Serve.SkillsWritable {
		save := func(ctx context.Context, req *mcp.CallToolRequest, in saveSkillIn) (*mcp.CallToolResult, any, error) {
			return s.saveSkill(ctx, dir, req, in)
		}
		del := func(ctx context.Context, req *mcp.CallToolRequest, in deleteSkillIn) (*mcp.CallToolResult, any, error) {
			return s.deleteSkill(ctx, dir, req, in)
		}
		if err := addTool(s, srv, saveSkillTool(), save); err != nil {
			return err
		}
		return addTool(s, srv, deleteSkillTool(), del)
	}
	return nil
}

// addSkillResource lists skill name of dir as a resource of srv.
func (s *Server) addSkillResource(dir string, srv *mcp.Server, name, desc string) {
	mime := "text/x-typescript"
	switch filepath.Ext(name) {
	case ".js":
		mime = "text/javascript"
	case ".py":
		mime = "text/x-python"
	}
	srv.AddResource(&mcp.Resource{URI: skillURI(name), Name: name, Description: desc, MIMEType: mime},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			src, err := readSkill(dir, name)
			if err != nil {
				return nil, mcp.ResourceNotFoundError(req.Params.URI)
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: mime, Text: string(src)}}}, nil
		})
}

type saveSkillIn struct {
	Name        string `json:"name"`
	Code        string `json:"code"`
	Description string `json:"description"`
}

type deleteSkillIn struct {
	Name string `json:"name"`
}

var nameSchema = &jsonschema.Schema{Type: "string", Pattern: skillNamePattern,
	Description: `The skill's file name: lowercase letters, digits and _, and .ts, .js or .py (e.g. "fetch_issues.ts").`}

func saveSkillTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        "save_skill",
		Title:       "Save a reusable program",
		Description: `Saves a program as a skill, which later programs import from /skills ("import { f } from '/skills/NAME.ts'"; Python: "import NAME"). Replaces a skill of the same name.`,
		InputSchema: &jsonschema.Schema{
			Type:     "object",
			Required: []string{"name", "code", "description"},
			Properties: map[string]*jsonschema.Schema{
				"name":        nameSchema,
				"code":        {Type: "string", Description: "The module's source; export what other programs use."},
				"description": {Type: "string", Description: "One line: what the skill does."},
			},
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		},
	}
}

func deleteSkillTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        "delete_skill",
		Title:       "Delete a skill",
		Description: "Deletes a saved skill.",
		InputSchema: &jsonschema.Schema{
			Type:                 "object",
			Required:             []string{"name"},
			Properties:           map[string]*jsonschema.Schema{"name": nameSchema},
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		},
	}
}

// saved are the skills that clients saved while this serve runs: each
// belongs to its client, who alone may replace or delete it. Every other
// skill in the directory (there when serve started, or put there by the
// operator) is the operator's, which no client may change.
type saved struct {
	mu    sync.Mutex // held while a skill is checked and written
	owner map[string]string
	size  map[string]int
}

// mayWrite says why client may not write skill name of dir, or "".
// s.saved.mu is held.
func (s *Server) mayWrite(client, dir, name string) string {
	if owner, ok := s.saved.owner[filepath.Join(dir, name)]; ok {
		if owner != client {
			return fmt.Sprintf("skill %q was saved by another client: choose another name", name)
		}
		return ""
	}
	if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
		return fmt.Sprintf("skill %q is the operator's, which no client may change: choose another name", name)
	}
	return ""
}

// quota says why client may not hold one more skill of n bytes in place of
// the skill at path, or "". s.saved.mu is held.
func (s *Server) quota(client, path string, n int) string {
	count, bytes := 1, n
	for k, owner := range s.saved.owner {
		if owner == client && k != path {
			count++
			bytes += s.saved.size[k]
		}
	}
	sv := &s.cfg.Serve
	switch {
	case count > sv.SkillsPerClient:
		return fmt.Sprintf("this client has saved %d skills, the most it may (serve.skills_per_client): delete one first", sv.SkillsPerClient)
	case int64(bytes) > int64(sv.SkillBytesPerClient):
		return fmt.Sprintf("this client's skills would hold %d bytes, more than the %v it may (serve.skill_bytes_per_client): delete or shorten one first", bytes, sv.SkillBytesPerClient)
	}
	return ""
}

// saveSkill saves a skill in dir, the skills directory of the caller's
// view.
func (s *Server) saveSkill(_ context.Context, dir string, req *mcp.CallToolRequest, in saveSkillIn) (*mcp.CallToolResult, any, error) {
	desc := strings.TrimSpace(in.Description)
	switch {
	case !skillName().MatchString(in.Name):
		return nil, nil, fmt.Errorf("name %q: want lowercase letters, digits and _, then .ts, .js or .py", truncate(in.Name, 80))
	case len(in.Code) > maxSkill:
		return nil, nil, fmt.Errorf("code is larger than %d KiB", maxSkill>>10)
	case desc == "" || len(desc) > 200 || strings.ContainsFunc(desc, breaksLine):
		return nil, nil, errors.New("description: want one line of at most 200 characters, without control characters")
	}
	client := clientOf(req)
	if err := s.rate.allow(client); err != nil {
		return nil, nil, err
	}
	comment := "// "
	if filepath.Ext(in.Name) == ".py" {
		comment = "# "
	}
	src := []byte(comment + desc + "\n" + in.Code)
	s.saved.mu.Lock()
	defer s.saved.mu.Unlock()
	path := filepath.Join(dir, in.Name)
	if why := cmp.Or(s.mayWrite(client, dir, in.Name), s.quota(client, path, len(src))); why != "" {
		return nil, nil, errors.New(why)
	}
	if err := writeSkill(dir, in.Name, src); err != nil {
		s.log.Error("saving a skill", "name", in.Name, "error", err)
		return nil, nil, errors.New("the skill could not be saved; the server's log says why")
	}
	s.saved.owner[path], s.saved.size[path] = client, len(src)
	_ = s.o.Audit.Log(audit.Skill{Op: "save", Name: in.Name, Client: client, CodeHash: fmt.Sprintf("%x", sha256.Sum256(src))})
	for _, srv := range s.mcpServers(dir) {
		s.addSkillResource(dir, srv, in.Name, desc)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
		Text: fmt.Sprintf("Saved. Import it as %q (resource %s).", "/skills/"+in.Name, skillURI(in.Name)),
	}}}, nil, nil
}

// deleteSkill deletes a skill of dir, the skills directory of the caller's
// view.
func (s *Server) deleteSkill(_ context.Context, dir string, req *mcp.CallToolRequest, in deleteSkillIn) (*mcp.CallToolResult, any, error) {
	if !skillName().MatchString(in.Name) {
		return nil, nil, fmt.Errorf("name %q is not a skill name", truncate(in.Name, 80))
	}
	client := clientOf(req)
	if err := s.rate.allow(client); err != nil {
		return nil, nil, err
	}
	s.saved.mu.Lock()
	defer s.saved.mu.Unlock()
	if why := s.mayWrite(client, dir, in.Name); why != "" {
		return nil, nil, errors.New(why)
	}
	path := filepath.Join(dir, in.Name)
	defer func() {
		delete(s.saved.owner, path)
		delete(s.saved.size, path)
	}()
	// unlink, not os.Remove: a directory named like a skill is no skill,
	// and is left alone.
	if err := syscall.Unlink(path); err != nil {
		return nil, nil, skillError(in.Name, "deleted", err)
	}
	_ = s.o.Audit.Log(audit.Skill{Op: "delete", Name: in.Name, Client: client})
	for _, srv := range s.mcpServers(dir) {
		srv.RemoveResources(skillURI(in.Name))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Deleted."}}}, nil, nil
}

// skillError says why skill name could not be read or deleted (what), by
// its errno alone: the error's path is the host's.
func skillError(name, what string, err error) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no skill %q", name)
	case errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EISDIR):
		// A link (O_NOFOLLOW), a directory (unlink): not a skill, which is
		// a regular file.
		return fmt.Errorf("%q is not a skill: not a regular file", name)
	case errors.As(err, &errno):
		return fmt.Errorf("skill %q could not be %s: %w", name, what, errno)
	}
	return fmt.Errorf("skill %q could not be %s", name, what)
}

// breaksLine reports whether r may end a line to some reader (JavaScript
// also ends one, and a skill's description comment, at U+2028 and U+2029),
// or has no business in one line of text.
func breaksLine(r rune) bool {
	return r < ' ' || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029
}

// writeSkill replaces skill name of dir with src, whole or not at all.
func writeSkill(dir, name string, src []byte) error {
	f, err := os.CreateTemp(dir, ".save-*")
	if err != nil {
		return err
	}
	_, err = f.Write(src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// mcpServers are the MCP servers of every view whose skills are dir's.
func (s *Server) mcpServers(dir string) []*mcp.Server {
	var out []*mcp.Server
	for _, v := range s.views {
		if v.cfg.Serve.Skills == dir {
			out = append(out, v.sessionful, v.stateless)
		}
	}
	return out
}
