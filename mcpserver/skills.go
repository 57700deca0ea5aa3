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
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/toolbridge"
)

// Skills are reusable programs, read-only at /skills in every jail,
// importable there (`import { f } from "/skills/NAME.ts"`, Python's
// `import NAME`), each listed as the resource skill://NAME. The operator's
// are the files of serve.skills (or of a profile's skills.dir). With
// serve.skills_writable, the tools save_skill and delete_skill let a
// client keep skills of its own: in its own directory under
// serve.saved_skills, laid over the operator's at /skills in its jails
// alone, and listed to it alone.

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
// offers the tools that change a client's own, and lists each client's
// own to it.
func (s *Server) addSkills(sv *config.Serve, srv *mcp.Server) error {
	dir := sv.Skills
	names, err := listSkills(dir)
	if err != nil {
		return fmt.Errorf("serve.skills: %w", err)
	}
	for _, n := range names {
		src, err := readSkill(dir, n)
		if err != nil {
			return fmt.Errorf("serve.skills: %w", err)
		}
		srv.AddResource(skillResource(n, skillDescription(src)), func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return readSkillResource(dir, n, req.Params.URI)
		})
	}
	if !sv.SkillsWritable {
		return nil
	}
	// Made now, private to serve's user: a directory that cannot be made
	// is the operator's to hear of at the start, not a client's at its
	// first save.
	if err := os.MkdirAll(sv.SavedSkillsDir(), 0o700); err != nil {
		return fmt.Errorf("serve.saved_skills: %w", err)
	}
	// The skills settings of the caller's view at each call: a reload
	// may have moved it.
	save := func(ctx context.Context, req *mcp.CallToolRequest, in saveSkillIn) (*mcp.CallToolResult, any, error) {
		return s.saveSkill(ctx, s.serveOf(clientOf(req)), req, in)
	}
	del := func(ctx context.Context, req *mcp.CallToolRequest, in deleteSkillIn) (*mcp.CallToolResult, any, error) {
		return s.deleteSkill(ctx, s.serveOf(clientOf(req)), req, in)
	}
	if err := addTool(s, srv, saveSkillTool(), save); err != nil {
		return err
	}
	if err := addTool(s, srv, deleteSkillTool(), del); err != nil {
		return err
	}
	srv.AddReceivingMiddleware(s.ownSkills())
	return nil
}

// ownSkills adds the caller's own skills to the resources that
// resources/list gives it, and serves them to its resources/read: no
// other client sees them.
func (s *Server) ownSkills() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "resources/read":
				p, _ := req.GetParams().(*mcp.ReadResourceParams)
				if p == nil {
					break
				}
				name, ok := strings.CutPrefix(p.URI, "skill://")
				own := s.savedSkillsOf(clientOfExtra(req.GetExtra()))
				if ok && skillName().MatchString(name) && own != "" {
					if res, err := readSkillResource(own, name, skillURI(name)); err == nil {
						return res, nil
					}
				}
			case "resources/list":
				res, err := next(ctx, method, req)
				if lr, ok := res.(*mcp.ListResourcesResult); ok && err == nil && lr.NextCursor == "" {
					lr.Resources = withOwnSkills(lr.Resources, s.savedSkillsOf(clientOfExtra(req.GetExtra())))
				}
				return res, err
			}
			return next(ctx, method, req)
		}
	}
}

// withOwnSkills adds the skills of own, a client's directory of saved
// skills ("": none), to the resources rs, in place of any of the same URI.
func withOwnSkills(rs []*mcp.Resource, own string) []*mcp.Resource {
	if own == "" {
		return rs
	}
	names, err := listSkills(own)
	if err != nil {
		return rs
	}
	for _, n := range names {
		src, err := readSkill(own, n)
		if err != nil {
			continue
		}
		r := skillResource(n, skillDescription(src))
		rs = slices.DeleteFunc(rs, func(o *mcp.Resource) bool { return o.URI == r.URI })
		rs = append(rs, r)
	}
	return rs
}

// savedSkillsOf is the directory of client's saved skills in view v, if
// its skills are writable and the client has saved some; else "".
func (s *Server) savedSkillsOf(client string) string {
	return savedSkillsIn(s.serveOf(client), client)
}

// savedSkillsIn is savedSkillsOf, as sv says.
func savedSkillsIn(sv *config.Serve, client string) string {
	if !sv.SkillsWritable {
		return ""
	}
	dir := clientSkillsDir(sv.SavedSkillsDir(), client)
	if _, err := os.Stat(dir); err != nil {
		return ""
	}
	return dir
}

// clientSkillsDir is where client's saved skills are kept under root: a
// directory named by the client's key, which stays in root and which no
// other client's can take.
func clientSkillsDir(root, client string) string {
	return filepath.Join(root, toolbridge.ClientKey(client))
}

// skillResource is the resource of skill name, described by desc.
func skillResource(name, desc string) *mcp.Resource {
	mime := "text/x-typescript"
	switch filepath.Ext(name) {
	case ".js":
		mime = "text/javascript"
	case ".py":
		mime = "text/x-python"
	}
	return &mcp.Resource{URI: skillURI(name), Name: name, Description: desc, MIMEType: mime}
}

// readSkillResource reads skill name of dir as the resource uri.
func readSkillResource(dir, name, uri string) (*mcp.ReadResourceResult, error) {
	src, err := readSkill(dir, name)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: skillResource(name, "").MIMEType, Text: string(src)}}}, nil
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
		Description: `Saves a program as a skill of yours, which your later programs import from /skills ("import { f } from '/skills/NAME.ts'"; Python: "import NAME"); other clients do not see it. Replaces your skill of the same name.`,
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
		Description: "Deletes a skill you saved.",
		InputSchema: &jsonschema.Schema{
			Type:                 "object",
			Required:             []string{"name"},
			Properties:           map[string]*jsonschema.Schema{"name": nameSchema},
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		},
	}
}

// operators says why no client may write skill name, one of the
// operator's in dir, or "".
func operators(dir, name string) string {
	if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
		return fmt.Sprintf("skill %q is the operator's, which no client may change: choose another name", name)
	}
	return ""
}

// quota says why the client whose saved skills are in own may not hold
// one more skill of n bytes in place of the one named name, or "".
// s.skillMu is held.
func (s *Server) quota(sv *config.Serve, own, name string, n int) string {
	count, bytes := 1, n
	names, _ := listSkills(own) // none yet: no directory
	for _, o := range names {
		if fi, err := os.Lstat(filepath.Join(own, o)); err == nil && o != name {
			count++
			bytes += int(fi.Size())
		}
	}
	switch {
	case count > sv.SkillsPerClient:
		return fmt.Sprintf("this client has saved %d skills, the most it may (serve.skills_per_client): delete one first", sv.SkillsPerClient)
	case int64(bytes) > int64(sv.SkillBytesPerClient):
		return fmt.Sprintf("this client's skills would hold %d bytes, more than the %v it may (serve.skill_bytes_per_client): delete or shorten one first", bytes, sv.SkillBytesPerClient)
	}
	return ""
}

// saveSkill saves a skill of the caller's own, as sv says.
func (s *Server) saveSkill(_ context.Context, sv *config.Serve, req *mcp.CallToolRequest, in saveSkillIn) (*mcp.CallToolResult, any, error) {
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
	if !sv.SkillsWritable {
		return nil, nil, errSkillsReadOnly
	}
	comment := "// "
	if filepath.Ext(in.Name) == ".py" {
		comment = "# "
	}
	src := []byte(comment + desc + "\n" + in.Code)
	own := clientSkillsDir(sv.SavedSkillsDir(), client)
	s.skillMu.Lock()
	defer s.skillMu.Unlock()
	if why := cmp.Or(operators(sv.Skills, in.Name), s.quota(sv, own, in.Name, len(src))); why != "" {
		return nil, nil, errors.New(why)
	}
	if err := writeSkill(own, in.Name, src); err != nil {
		s.log.Error("saving a skill", "name", in.Name, "client", client, "error", err)
		return nil, nil, errors.New("the skill could not be saved; the server's log says why")
	}
	_ = s.o.Audit.Log(audit.Skill{Op: "save", Name: in.Name, Client: client, CodeHash: fmt.Sprintf("%x", sha256.Sum256(src))})
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
		Text: fmt.Sprintf("Saved. Your later programs import it as %q (resource %s); no other client sees it.", "/skills/"+in.Name, skillURI(in.Name)),
	}}}, nil, nil
}

// deleteSkill deletes a skill of the caller's own, as sv says.
func (s *Server) deleteSkill(_ context.Context, sv *config.Serve, req *mcp.CallToolRequest, in deleteSkillIn) (*mcp.CallToolResult, any, error) {
	if !skillName().MatchString(in.Name) {
		return nil, nil, fmt.Errorf("name %q is not a skill name", truncate(in.Name, 80))
	}
	client := clientOf(req)
	if err := s.rate.allow(client); err != nil {
		return nil, nil, err
	}
	if !sv.SkillsWritable {
		return nil, nil, errSkillsReadOnly
	}
	own := clientSkillsDir(sv.SavedSkillsDir(), client)
	s.skillMu.Lock()
	defer s.skillMu.Unlock()
	// unlink, not os.Remove: a directory named like a skill is no skill,
	// and is left alone.
	err := syscall.Unlink(filepath.Join(own, in.Name))
	if errors.Is(err, fs.ErrNotExist) {
		if why := operators(sv.Skills, in.Name); why != "" {
			return nil, nil, errors.New(why)
		}
	}
	if err != nil {
		return nil, nil, skillError(in.Name, "deleted", err)
	}
	_ = s.o.Audit.Log(audit.Skill{Op: "delete", Name: in.Name, Client: client})
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Deleted."}}}, nil, nil
}

// errSkillsReadOnly answers a save or a delete of a client whose skills a
// reload made read-only (its session was made before).
var errSkillsReadOnly = errors.New("this client may not save or delete skills any more (serve.skills_writable, or its profile's skills.writable)")

// serveOf is the serve settings of client's view in the current
// configuration (a profile's skills are its own); for a client it does
// not know, settings of no skills.
func (s *Server) serveOf(client string) *config.Serve {
	if v := s.gens.current().viewOf(client); v != nil {
		return &v.cfg.Serve
	}
	return &config.Serve{}
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

// writeSkill replaces skill name of dir with src, whole or not at all,
// making dir (and its parent, the directory of every client's saved
// skills, private to serve's user) if need be.
func writeSkill(dir, name string, src []byte) error {
	if err := os.Mkdir(filepath.Dir(dir), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	// Readable by all: the jail's user reads it through its mount, whose
	// root it is (the private parent is not on the way).
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
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
