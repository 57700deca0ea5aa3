package mcpserver

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/cruciblehq/crucible/toolbridge"
	"github.com/cruciblehq/crucible/tracing"
	"github.com/cruciblehq/crucible/workspace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cruciblehq/crucible/lang"
	"github.com/cruciblehq/crucible/sandbox"
)

// executeIn is execute's arguments.
type executeIn struct {
	Code      string `json:"code"`
	Language  string `json:"language,omitempty"`
	Workspace string `json:"workspace,omitempty"`
	Check     *bool  `json:"check,omitempty"` // nil: serve.typecheck's
}

// executeOut is execute's structured result: the execution's
// sandbox.Result as the model reads it (without the operator's signal and
// degraded layers, with error and result always there), and the handle of
// its workspace. Each field's jsonschema tag is its description in the
// output schema (outputSchema).
type executeOut struct {
	ExitCode   int                 `json:"exit_code" jsonschema:"The program's exit code; 124 when its time ran out."`
	Stdout     string              `json:"stdout" jsonschema:"What the program printed."`
	Stderr     string              `json:"stderr" jsonschema:"What the program printed as errors."`
	Result     json.RawMessage     `json:"result" jsonschema:"The program's value (its final return), as JSON; null if none."`
	Error      *lang.Error         `json:"error" jsonschema:"The program's uncaught error: name, message, stack."`
	Violations []sandbox.Violation `json:"violations" jsonschema:"Operations the sandbox refused, with the reason."`
	ToolCalls  []sandbox.ToolCall  `json:"tool_calls" jsonschema:"The tool calls the program made, in order."`
	DurationMS int64               `json:"duration_ms"`
	Workspace  string              `json:"workspace" jsonschema:"The handle of this execution's /workspace, to pass back as execute's workspace."`
	LimitsHit  []string            `json:"limits_hit" jsonschema:"Limits reached: timeout, memory, pids, output."`
	Truncated  bool                `json:"truncated" jsonschema:"Whether output was cut: by the jail's output limit (limits_hit has output), or here, its middle, to keep the answer short."`
	Network    *sandbox.NetworkUse `json:"network,omitempty" jsonschema:"What the program's connections carried: connections, bytes_out, bytes_in."`
	Secrets    []sandbox.SecretUse `json:"secrets,omitempty" jsonschema:"Where the operator's secrets went: name, host, method, path, where (header, query, path, body, or signature), count."`

	jail string // sandbox.Result.Jail, for the console; not the model's
}

// newExecuteOut is res, of an execution in the workspace handle, as execute
// answers it.
func newExecuteOut(res *sandbox.Result, handle string) *executeOut {
	out := &executeOut{
		ExitCode: res.ExitCode, Stdout: res.Stdout, Stderr: res.Stderr,
		Result: res.Result, Error: res.Error, Violations: res.Violations, ToolCalls: res.ToolCalls,
		DurationMS: res.DurationMS, Workspace: handle, LimitsHit: res.LimitsHit, Truncated: res.Truncated,
		Network: res.Network, Secrets: res.Secrets, jail: res.Jail,
	}
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	return out
}

// outputSchema is execute's output schema, made once from executeOut. What
// its lists hold, and the network's counts, are told in words, as plain
// objects: every session's model reads the schema, and the SDK checks
// every result against it.
var outputSchema = sync.OnceValues(func() (json.RawMessage, error) {
	obj := &jsonschema.Schema{Type: "object"}
	list := func(item *jsonschema.Schema) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "array", Items: item}
	}
	s, err := jsonschema.For[executeOut](&jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[json.RawMessage]():     {}, // any JSON
		reflect.TypeFor[lang.Error]():          obj,
		reflect.TypeFor[sandbox.NetworkUse]():  obj,
		reflect.TypeFor[[]string]():            list(&jsonschema.Schema{Type: "string"}),
		reflect.TypeFor[[]sandbox.Violation](): list(obj),
		reflect.TypeFor[[]sandbox.ToolCall]():  list(obj),
		reflect.TypeFor[[]sandbox.SecretUse](): list(obj),
	}})
	if err != nil {
		return nil, err
	}
	// What the schema has always promised, no more: a result may hold
	// more than it says, only these are required (the others are there
	// too, but a client need not rely on it), and network, if there, is
	// an object.
	s.AdditionalProperties = nil
	s.Required = slices.DeleteFunc(s.Required, func(p string) bool {
		return slices.Contains([]string{"result", "error", "limits_hit", "truncated"}, p)
	})
	if n := s.Properties["network"]; n != nil {
		n.Type, n.Types = "object", nil
	}
	return json.Marshal(s)
})

// languages are execute's languages, the default first.
var languages = sandbox.Languages()

// languageNames are their names, as the model gives them.
func languageNames() []string {
	names := make([]string, len(languages))
	for i, l := range languages {
		names[i] = l.Name
	}
	return names
}

// orList is "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// maxCode bounds a program's source.
const maxCode = 1 << 20

func executeTool(checks bool) (*mcp.Tool, error) {
	out, err := outputSchema()
	if err != nil {
		return nil, fmt.Errorf("the output schema of execute: %w", err)
	}
	str := func(d string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: d} }
	var enum []any
	for _, l := range languageNames() {
		enum = append(enum, l)
	}
	props := map[string]*jsonschema.Schema{
		"code":      str("The program's source."),
		"language":  {Type: "string", Enum: enum, Description: `The program's language; default "ts" (TypeScript).`},
		"workspace": str("A workspace handle from an earlier result, to run in the same /workspace."),
	}
	if checks {
		props["check"] = &jsonschema.Schema{Type: "boolean", Description: "Type-check the TypeScript or JavaScript against the tools' declarations (those search_tools shows) before it runs: " +
			"a program that does not pass does not run, and its error (TypeCheckError) lists each mistake at its line."}
	}
	return &mcp.Tool{
		Name:  "execute",
		Title: "Run a program in a sandbox",
		Description: "Runs a program in a fresh, locked-down sandbox and returns its output, its result and what it was refused. " +
			"The program calls MCP tools as `await tools.<server>.<tool>({...})` (TypeScript/JavaScript) or `tools.<server>.<tool>(...)` after `from crucible import tools` (Python); " +
			"use search_tools to find them. A final `return` gives the result. /workspace persists for the next execute given the result's workspace handle.",
		InputSchema: &jsonschema.Schema{
			Type:                 "object",
			Required:             []string{"code"},
			Properties:           props,
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		},
		OutputSchema: out,
	}, nil
}

// executeHandler runs execute: checks, limits, a workspace, the sandbox,
// in a run of its own; a 2026-07-28 client's retry that answers an
// approval takes up the run it names.
func (s *Server) executeHandler(stateless bool) mcp.ToolHandlerFor[executeIn, *executeOut] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in executeIn) (*mcp.CallToolResult, *executeOut, error) {
		var r *run
		if state := req.Params.RequestState; state != "" {
			var err error
			if r, err = s.approvals.resume(state, clientOf(req), req.Params.InputResponses); err != nil {
				return nil, nil, err
			}
		} else if r = s.start(ctx, req, in, stateless); r == nil {
			return nil, nil, errClosing
		}
		stop := s.progress(ctx, req)
		defer stop()
		select {
		case <-r.done:
		case q := <-r.questions:
			return s.approvals.park(r, q, clientOf(req), s.mint("st_")), nil, nil
		case <-ctx.Done():
			r.cancel()
			<-r.done
		}
		if r.err != nil {
			return nil, nil, r.err
		}
		if logins := r.pendingLogins(); len(logins) > 0 {
			// A client that could not be asked during the execution is
			// asked now, with the error that carries the URLs to it alone.
			return nil, nil, mcp.URLElicitationRequiredError(logins)
		}
		return &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: summary(r.out)}},
			IsError: r.out.ExitCode != 0 || r.out.Error != nil,
		}, r.out, nil
	}
}

// start runs the execution that req asks for in a goroutine, counted as a
// call that Close waits for, under the current configuration, which it
// holds to its end; nil once Close has begun. It ends with ctx,
// the call's, only through the handler: a run that asks a 2026-07-28
// client for an approval outlives the call that began it.
func (s *Server) start(ctx context.Context, req *mcp.CallToolRequest, in executeIn, stateless bool) *run {
	if !s.join(&s.calls) {
		return nil
	}
	r := &run{questions: make(chan *question), done: make(chan struct{})}
	g, release := s.gens.hold()
	v := g.viewOf(clientOf(req))
	if v == nil {
		release()
		s.calls.Done()
		r.err = errNoClient
		close(r.done)
		return r
	}
	// The execution's span, the client's span its parent where the
	// request's _meta names one; it outlives the call for a 2026-07-28
	// client that is asked something.
	tctx, span := tracing.Tracer().Start(tracing.FromMeta(ctx, req.Params.Meta), "execute", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("crucible.language", cmp.Or(in.Language, languages[0].Name)), attribute.String("crucible.client", clientOf(req)),
			attribute.String("mcp.client.name", mcpClientName(req))))
	rctx, cancel := context.WithCancel(context.WithoutCancel(tctx))
	r.cancel = cancel
	caller := toolbridge.Caller{Client: clientOf(req), Profile: v.profile, Approve: s.approver(rctx, req, r), Login: s.loginAsker(rctx, req, r), Elicit: s.elicitor(rctx, req, r),
		Trace: span.SpanContext()}
	row := s.console.begin(caller.Client, v.profile, truncate(cmp.Or(in.Language, languages[0].Name), 16))
	go func() {
		defer s.calls.Done()
		defer release() // after the answer: it may close a generation replaced
		defer cancel()
		began := time.Now()
		r.out, r.err = s.execute(rctx, v, req, in, stateless, caller)
		s.stats.execution(caller.Client, r.out, r.err, time.Since(began))
		s.console.end(row, r.out, r.err)
		endExecuteSpan(span, r.out, r.err)
		close(r.done)
	}()
	return r
}

// endExecuteSpan ends an execution's span with what it came to: counts,
// the exit, a hash of the workspace's handle (the handle itself is a
// capability), never what the program wrote.
func endExecuteSpan(span trace.Span, out *executeOut, err error) {
	defer span.End()
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return
	}
	sum := sha256.Sum256([]byte(out.Workspace))
	span.SetAttributes(attribute.Int("crucible.exit_code", out.ExitCode), attribute.Int64("crucible.duration_ms", out.DurationMS),
		attribute.Int("crucible.violations", len(out.Violations)), attribute.Int("crucible.tool_calls", len(out.ToolCalls)),
		attribute.StringSlice("crucible.limits_hit", out.LimitsHit), attribute.String("crucible.workspace_sha256", hex.EncodeToString(sum[:8])))
	if out.ExitCode != 0 || out.Error != nil {
		span.SetStatus(codes.Error, fmt.Sprintf("exit %d", out.ExitCode))
	}
}

// mcpClientName is the name the MCP client gave itself, cut short.
func mcpClientName(req *mcp.CallToolRequest) string {
	if req.Session == nil {
		return ""
	}
	p := req.Session.InitializeParams()
	if p == nil || p.ClientInfo == nil {
		return ""
	}
	return truncate(p.ClientInfo.Name, 64)
}

func (s *Server) execute(ctx context.Context, v *view, req *mcp.CallToolRequest, in executeIn, stateless bool, caller toolbridge.Caller) (*executeOut, error) {
	language := cmp.Or(in.Language, languages[0].Name)
	l := slices.IndexFunc(languages, func(l sandbox.Language) bool { return l.Name == language })
	switch {
	case l < 0:
		return nil, fmt.Errorf("language %q: want %s", truncate(in.Language, 16), orList(languageNames()))
	case strings.TrimSpace(in.Code) == "":
		return nil, errors.New("code is empty")
	case len(in.Code) > maxCode:
		return nil, fmt.Errorf("code is larger than %d KiB", maxCode>>10)
	}
	if s.draining.Load() {
		return nil, errDraining
	}
	client := clientOf(req)
	if err := s.rate.allow(client); err != nil {
		return nil, err
	}
	var se *session
	if !stateless {
		se = s.sessionOf(req.Session, client)
	}
	ctx, cancel := s.executionContext(ctx, req, se)
	defer cancel()
	ws, err := s.reuse(in.Workspace, client, se)
	if err != nil {
		return nil, err
	}
	if err := s.gate.enter(ctx); err != nil {
		if ws != nil {
			s.spaces.Release(ws)
		}
		return nil, err
	}
	defer s.gate.leave()

	if ws == nil {
		if ws, err = s.spaces.Create(client); err != nil {
			return nil, err
		}
		s.own(se, ws)
	}
	defer s.spaces.Release(ws)

	check, err := v.typeCheck(ctx, in, language, client)
	if err != nil {
		return nil, err
	}
	// The file name that the program's errors call it by.
	file := "execute" + languages[l].Ext
	res, err := s.runProgram(ctx, v, ws.Dir, savedSkillsIn(&v.cfg.Serve, client), language, in.Code, file, caller, check)
	if err != nil {
		return nil, s.didNotRun(err)
	}
	out := newExecuteOut(res, ws.Handle)
	out.bound(int(v.cfg.Serve.MaxResultOutput))
	return out, nil
}

// bound cuts each of what the program wrote or returned to about limit
// bytes as JSON, head and tail kept, so that one result cannot flood the
// model's context: the jail's own output limit is for the host's memory,
// and much larger.
func (o *executeOut) bound(limit int) {
	cut := func(s *string) {
		var c bool
		*s, c = cutMiddle(*s, limit)
		o.Truncated = o.Truncated || c
	}
	cut(&o.Stdout)
	cut(&o.Stderr)
	if o.Error != nil {
		cut(&o.Error.Name)
		cut(&o.Error.Message)
		cut(&o.Error.Stack)
	}
	if len(o.Result) > limit {
		// JSON cut anywhere is no longer JSON: what is kept of it becomes
		// a string (of a string, its text).
		r := string(o.Result)
		var str string
		if json.Unmarshal(o.Result, &str) == nil {
			r = str
		}
		if r, c := cutMiddle(r, limit); c {
			o.Result, _ = json.Marshal(r)
			o.Truncated = true
		}
	}
}

// cutNote stands where cutMiddle cut.
const cutNote = "\n... %d bytes cut here (serve.max_result_output; write large output to a file in /workspace) ...\n"

// cutMiddle keeps the head and the tail of s, at most limit bytes of them
// as JSON (a control character takes six there), whole characters only,
// with a line between them that says how much was cut, and why.
func cutMiddle(s string, limit int) (string, bool) {
	if len(s) <= limit && jsonLen(s) <= limit {
		return s, false
	}
	for keep := min(len(s), limit); ; keep /= 2 {
		h := keep / 2
		for h > 0 && !utf8.RuneStart(s[h]) {
			h--
		}
		t := len(s) - keep/2
		for t < len(s) && !utf8.RuneStart(s[t]) {
			t++
		}
		if jsonLen(s[:h])+jsonLen(s[t:]) <= limit || keep < 16 {
			return s[:h] + fmt.Sprintf(cutNote, t-h) + s[t:], true
		}
	}
}

// jsonLen is the length of s as a JSON string.
func jsonLen(s string) int {
	b, _ := json.Marshal(s)
	return len(b)
}

// executionContext is the context an execution runs in: a session's
// executions end with it, a stateless one with the server, and any but a
// 2026-07-28 client's with the HTTP request that asked for it (when it is
// gone, nobody will read the answer; a 2026-07-28 client's request ends
// the execution through its handler, which it may leave to be asked for an
// approval).
func (s *Server) executionContext(ctx context.Context, req *mcp.CallToolRequest, se *session) (context.Context, context.CancelFunc) {
	owner := s.ctx
	if se != nil {
		owner = se.ctx
	}
	ctx, cancel := joinContext(ctx, owner)
	if rc := s.requestContext(req); rc != nil && !rounds(req) {
		var cancel2 context.CancelFunc
		ctx, cancel2 = joinContext(ctx, rc)
		return ctx, func() {
			cancel2()
			cancel()
		}
	}
	return ctx, cancel
}

// typeCheck is the type check that an execution gets, or nil for none:
// as execute's check says, else as serve.typecheck does for the languages
// that can be checked. A check asked for where none can be made is
// refused, and says how to get one. Type checking helps the model; it is
// no wall, and check: false skips it.
func (v *view) typeCheck(ctx context.Context, in executeIn, language, client string) (*sandbox.TypeCheck, error) {
	can := sandbox.CanTypeCheck(v.cfg, language)
	want := v.cfg.Serve.TypeCheck && can == nil
	if in.Check != nil {
		want = *in.Check
	}
	switch {
	case !want:
		return nil, nil
	case can != nil:
		return nil, fmt.Errorf("check: %w", can)
	}
	return &sandbox.TypeCheck{Declarations: v.declarations(ctx, client)}, nil
}

// declarations are the TypeScript declarations of v's tools, as
// search_tools shows them to client. A server that cannot list its tools
// now is declared with any tool, so that its calls are not the check's
// errors.
func (v *view) declarations(ctx context.Context, client string) string {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	tools, err := v.tools.ListFor(ctx, client)
	d := sandbox.ToolDeclarations(tools)
	if err != nil {
		for _, name := range unlistedServers(v.tools.Servers(), tools) {
			d += fmt.Sprintf("\n// %s could not list its tools now.\ndeclare namespace tools {\n  const %s: { [tool: string]: (args?: Record<string, unknown>) => Promise<unknown> };\n}\n", name, name)
		}
	}
	return d
}

// runProgram runs the program with dir at /workspace, and the client's
// saved skills ("": none) over the view's: in a warm jail of the pool of
// its language, else in a new jail.
func (s *Server) runProgram(ctx context.Context, v *view, dir, saved, language, code, file string, caller toolbridge.Caller, check *sandbox.TypeCheck) (*sandbox.Result, error) {
	if p := v.poolFor(language); p != nil {
		return p.Do(ctx, sandbox.Job{Source: []byte(code), File: file, Language: language, Workspace: dir, SavedSkills: saved, Caller: caller, TypeCheck: check})
	}
	cfg := *v.cfg
	cfg.Sandbox.Workspace = dir
	var prog *lang.Program
	var err error
	if check != nil {
		prog, err = sandbox.CheckedProgram(&cfg, language, []byte(code), file, check)
	} else {
		prog, err = sandbox.Program(&cfg, language, []byte(code), file)
	}
	if err != nil {
		return nil, err
	}
	return sandbox.Run(ctx, &cfg, prog, sandbox.Options{Audit: s.o.Audit, Tools: v.tools, Secrets: v.secrets, Skills: v.cfg.Serve.Skills, SavedSkills: saved, Caller: caller})
}

// reuse finds the workspace an execution runs in, if it is not a fresh
// one: the handle given, else its session's.
func (s *Server) reuse(handle, client string, se *session) (*workspace.Workspace, error) {
	if handle != "" {
		return s.spaces.Acquire(handle, client)
	}
	if se == nil {
		return nil, nil
	}
	h := s.sessions.handleOf(se)
	if h == "" {
		return nil, nil
	}
	ws, err := s.spaces.Acquire(h, client)
	if err != nil {
		// Expired while the session idled: the session starts afresh.
		return nil, nil
	}
	return ws, nil
}

// own makes ws the workspace of session se (if any), deleted with it; if
// the session has ended meanwhile, at once (once unused).
func (s *Server) own(se *session, ws *workspace.Workspace) {
	if se != nil && !s.sessions.own(se, ws.Handle) {
		s.spaces.Remove(ws.Handle)
	}
}

// errRun marks the errors of executions that the sandbox could not run (as
// opposed to calls refused before).
var errRun = errors.New("the execution did not run")

// runError is what the model is told of an execution that did not run.
type runError struct{ msg string }

func (e *runError) Error() string { return e.msg }
func (e *runError) Unwrap() error { return errRun }

// didNotRun is what the model is told of err, from an execution that the
// sandbox did not run; its detail goes to the operator's log.
func (s *Server) didNotRun(err error) error {
	var se *sandbox.SetupError
	switch {
	case errors.As(err, &se):
		// Its detail may name host paths: the operator's log only.
		s.log.Error("an execution could not be set up", "layer", se.Layer, "detail", se.Detail, "error", se.Error())
		return &runError{"the sandbox could not be set up: " + se.Error()}
	case errors.Is(err, context.Canceled):
		return &runError{"cancelled: the execution was stopped and its jail removed"}
	}
	s.log.Error("an execution failed", "error", err)
	return &runError{"the execution failed to run; the server's log says why"}
}

// progress sends a progress notification every ProgressEvery while the
// execution runs, if the client asked for them: clients give up on a call
// that is silent for long (often 60s).
func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil || req.Session == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.o.ProgressEvery)
		defer t.Stop()
		began := time.Now()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(n),
					Message: fmt.Sprintf("running for %s", time.Since(began).Round(time.Second)),
				})
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// requestContext is the context of the HTTP request that carries req, done
// when the request is gone; nil for stdio.
func (s *Server) requestContext(req *mcp.CallToolRequest) context.Context {
	if req.Extra == nil || req.Extra.Header == nil {
		return nil
	}
	if id := req.Extra.Header.Get(requestHeader); id != "" {
		return s.requests.context(id)
	}
	return nil
}

// clientOf names the client of a request, for its rate limit and its
// workspaces: its bearer token's, or the stdio connection's.
func clientOf(req *mcp.CallToolRequest) string { return clientOfExtra(req.Extra) }

// clientOfExtra is the client of a request with extra, as clientOf.
func clientOfExtra(extra *mcp.RequestExtra) string {
	if extra != nil && extra.TokenInfo != nil && extra.TokenInfo.UserID != "" {
		return extra.TokenInfo.UserID
	}
	return "stdio"
}

// summary is the text the model reads of a result.
func summary(o *executeOut) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d in %d ms", o.ExitCode, o.DurationMS)
	if len(o.LimitsHit) > 0 {
		fmt.Fprintf(&b, " (limits hit: %s)", strings.Join(o.LimitsHit, ", "))
	}
	b.WriteString("\n")
	// What the program wrote is quoted, each line behind "| ", so that no
	// line of it can pass for one of ours ("refused: ...", "workspace: ...").
	if string(o.Result) != "null" {
		b.WriteString("result:\n" + quoteLines(truncate(string(o.Result), maxText)))
	}
	if o.Error != nil {
		b.WriteString("error:\n" + quoteLines(truncate(o.Error.Name+": "+o.Error.Message, maxText)))
	}
	if o.Stdout != "" {
		b.WriteString("stdout:\n" + quoteLines(truncate(o.Stdout, maxText)))
	}
	if o.Stderr != "" {
		b.WriteString("stderr:\n" + quoteLines(truncate(o.Stderr, maxText)))
	}
	for _, v := range o.Violations {
		what := v.Kind
		if v.Host != "" {
			what += " " + v.Host
		} else if v.Syscall != "" {
			what += " " + v.Syscall
		}
		fmt.Fprintf(&b, "refused: %s: %s\n", oneLine(what), oneLine(v.Reason))
	}
	if len(o.ToolCalls) > 0 {
		fmt.Fprintf(&b, "tool calls: %d\n", len(o.ToolCalls))
	}
	fmt.Fprintf(&b, "workspace: %s\n", o.Workspace)
	return b.String()
}

// quoteLines puts "| " before each line of s, counting as a line break
// everything a reader may take for one.
func quoteLines(s string) string {
	s = lineBreaks.Replace(strings.TrimRight(s, "\n"))
	return "| " + strings.ReplaceAll(s, "\n", "\n| ") + "\n"
}

// lineBreaks turns every line break but LF into LF.
var lineBreaks = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\v", "\n", "\f", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n")

// oneLine keeps a text that may hold a program's words (a name it asked
// for, inside a reason) on one line.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if breaksLine(r) {
			return ' '
		}
		return r
	}, s)
}

// maxText bounds each part of the text summary; the structured content
// has all of it.
const maxText = 8 << 10

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "... (cut; see the structured result)"
}

// joinContext is ctx, also cancelled when other is (without a goroutine
// per execution waiting for either).
func joinContext(ctx, other context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(other, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}
