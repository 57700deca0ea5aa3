package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cruciblehq/crucible/audit"
	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/jail"
	"github.com/cruciblehq/crucible/lang"
	"github.com/cruciblehq/crucible/toolbridge"
	"github.com/cruciblehq/crucible/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Pool keeps jails built ahead of their work: namespaces, cgroup, network
// and a worker that has readied its engine, waiting on its stdin. Each jail
// serves one execution, then is destroyed; the pool builds its replacement
// in the background. Every jail of a pool has the configuration the pool
// was made with: on a change of configuration, close the pool and make
// another.
type Pool struct {
	cfg  *config.Config
	lang lang.Language
	prog *lang.Program // the warm worker
	o    PoolOptions

	ctx    context.Context // ends every jail of the pool
	cancel context.CancelFunc
	slots  chan struct{} // bounds the executions in flight
	wg     sync.WaitGroup

	mu      sync.Mutex
	ready   []*warmJail
	filling int // jails being built for ready
	closed  bool

	stats poolCounters
}

// PoolOptions size a pool.
type PoolOptions struct {
	Size     int           // jails kept ready
	Idle     time.Duration // a ready jail older than this is destroyed
	InFlight int           // executions at once; more wait their turn
	Audit    *audit.Writer
	// Tools, if not nil, gives each execution a tools channel to its
	// bridge; the pool does not close it.
	Tools *Tools
	// Secrets, from LoadSecrets, is required when the configuration has
	// secrets: each jail gets placeholders of its own when it is built.
	Secrets *Secrets
	// Workspaces: each execution brings its own workspace (Job.Workspace),
	// a host directory bound at /workspace when its work arrives. Until
	// then a jail's /workspace is an empty, read-only directory: nothing a
	// jail does before its work arrives reaches any workspace. Without it,
	// each jail has a fresh tmpfs of its own there. It needs root.
	Workspaces bool
	// Skills is as in Options.
	Skills string

	// ticks, if not nil, drives the expiry in place of its ticker: each
	// time received sweeps the jails idle at that time (a test's clock).
	ticks <-chan time.Time
}

// PoolStats say what a pool has done, for metrics.
type PoolStats struct {
	// Ready counts the jails that can run a program now: their worker
	// waits for it with its engine warmed (for a language whose worker
	// says so, lang.Warm.SaysReady; else once they are started).
	Ready    int   `json:"ready"`
	InFlight int   `json:"in_flight"` // executions running now
	Warm     int64 `json:"warm"`      // executions that found a jail ready
	Cold     int64 `json:"cold"`      // ... that had to wait for one to be built, or to finish starting
	Expired  int64 `json:"expired"`   // ready jails destroyed unused, past Idle
	Failed   int64 `json:"failed"`    // jails that could not be built
	// Misses counts Cold by the language of the program that waited.
	Misses map[string]int64 `json:"misses,omitempty"`
}

type poolCounters struct {
	warm, cold, expired, failed atomic.Int64
	lastFailure                 atomic.Pointer[jail.SetupError] // why the last jail could not be built
	misses                      map[string]int64                // under Pool.mu
}

// ErrPoolClosed is Do's error once the pool is closed.
var ErrPoolClosed = errors.New("sandbox: the pool is closed")

// warmJail is one jail of the pool, running from its birth.
type warmJail struct {
	x     *execution
	born  time.Time
	ready chan struct{} // closed when its worker waits for work, warmed
	// taken is closed when its worker has read its job (lang.TakenMark),
	// or at once for a worker that does not say so.
	taken  chan struct{}
	cancel context.CancelFunc

	j       *jail.Jail    // set when started is closed: the jail runs
	started chan struct{} // never closed for a jail that could not start

	// Set when ended is closed: the execution's outcome is known, as soon
	// as the worker has exited and its output is read (j.Wait). done is
	// closed later, when the jail is gone.
	ended chan struct{}
	res   *jail.Result
	err   error
	done  chan struct{}
}

// NewPool starts a pool of jails that wait for programs in the language
// named (one that can wait: the embedded engine's ts and js, and py), with
// cfg, and fills it.
func NewPool(cfg *config.Config, language string, o PoolOptions) (*Pool, error) {
	l, err := lookup(cfg, language)
	if err != nil {
		return nil, err
	}
	if l.Warm == nil {
		return nil, fmt.Errorf("sandbox: %s programs cannot wait in a ready jail", language)
	}
	if o.InFlight <= 0 {
		o.InFlight = max(o.Size, 1)
	}
	prog, err := l.Warm.Program(settings(cfg))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", language, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if c := l.Warm.Compile; c != nil {
		prog = compiled(ctx, cfg, c, prog)
	}
	p := &Pool{cfg: cfg, lang: l, prog: prog,
		o: o, ctx: ctx, cancel: cancel, slots: make(chan struct{}, o.InFlight)}
	p.refill()
	if o.Idle > 0 {
		p.wg.Add(1)
		go p.expire()
	}
	return p, nil
}

// compiled is prog with the files that c makes: its program runs once, in
// a jail of its own, with no workspace, network or tools, on nothing but
// what the language gave it. It is prog itself should that fail: its
// workers then do that work themselves.
func compiled(ctx context.Context, cfg *config.Config, c *lang.Compile, prog *lang.Program) *lang.Program {
	spec := programSpec(&cfg.Sandbox, c.Program(settings(cfg)))
	spec.Workspace = ""
	var out bytes.Buffer
	spec.Stdout = &out
	res, err := jail.Run(ctx, spec)
	if err != nil || res.ExitCode != 0 || res.Truncated {
		return prog
	}
	files, err := c.Files(out.Bytes())
	if err != nil || len(files) == 0 {
		return prog
	}
	with := *prog
	with.Files = maps.Clone(prog.Files)
	maps.Copy(with.Files, files)
	return &with
}

// Job is one program for a pool's jail.
type Job struct {
	Source []byte
	File   string // what the program is named ("-" for standard input)
	// Language is the program's: "" for the pool's, or one that the pool
	// Serves.
	Language string
	// Workspace is the host directory bound at /workspace, for a pool
	// with PoolOptions.Workspaces (which requires one); "" without.
	Workspace string
	// SavedSkills is a client's saved skills, laid over the pool's
	// Skills as Options.SavedSkills; only with a Workspace.
	SavedSkills string
	// Caller is whom the job runs for, as Options.Caller.
	Caller toolbridge.Caller
	// TypeCheck, if not nil, type-checks the program before it runs (see
	// CanTypeCheck); it does not run unless it passes.
	TypeCheck *TypeCheck
}

// Do runs job in a ready jail, or in a new one if none is ready, and waits
// for the execution. Its output is captured into the Result.
func (p *Pool) Do(ctx context.Context, job Job) (*Result, error) {
	l := p.lang
	if job.Language != "" && job.Language != l.Name {
		if !p.Serves(job.Language) {
			return nil, fmt.Errorf("sandbox: a %s pool does not run %q programs", p.lang.Name, job.Language)
		}
		l, _ = lookup(p.cfg, job.Language) // Serves found it
	}
	if (job.Workspace != "") != p.o.Workspaces {
		return nil, errors.New("sandbox: a pool with PoolOptions.Workspaces runs each job in the job's workspace, and only such a pool")
	}
	if job.SavedSkills != "" && (job.Workspace == "" || p.o.Skills == "") {
		return nil, errors.New("sandbox: a job's saved skills need a workspace, and a pool with Skills")
	}
	res, err := p.runIn(ctx, l, job)
	if errors.Is(err, errUntaken) {
		res, err = p.runIn(ctx, l, job) // nothing of it ran
	}
	return res, err
}

// Serves says whether the pool's jails run programs in language: the
// pool's own, or one that shares its warm worker (sameWorker).
func (p *Pool) Serves(language string) bool { return sameWorker(p.cfg, p.lang.Name, language) }

// Languages are the languages whose programs the pool runs.
func (p *Pool) Languages() []string {
	var ls []string
	for _, l := range lang.All() {
		if p.Serves(l.Name) {
			ls = append(ls, l.Name)
		}
	}
	return ls
}

// sameWorker says whether the warm jails of languages a and b are alike,
// so that a jail readied for one runs the other's programs: the same
// language that can wait in a warm jail, or two whose lang.Warm names the
// same Worker (ts and js).
func sameWorker(cfg *config.Config, a, b string) bool {
	la, err := lookup(cfg, a)
	if err != nil || la.Warm == nil {
		return false
	}
	if a == b {
		return true
	}
	lb, err := lookup(cfg, b)
	return err == nil && lb.Warm != nil && la.Warm.Worker != "" && lb.Warm.Worker == la.Warm.Worker
}

// runIn runs job, a program in l, in one of the pool's jails.
func (p *Pool) runIn(ctx context.Context, l lang.Language, job Job) (res *Result, err error) {
	input, err := jobInput(l, job)
	if err != nil {
		return nil, err
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-p.slots }()
	w, err := p.take(l.Name)
	if err != nil {
		return nil, err
	}
	defer p.wg.Done() // take counted this Run
	warm := w.isReady()
	defer func() {
		if res != nil {
			res.Jail = "cold"
			if warm {
				res.Jail = "warm"
			}
		}
	}()
	// The replacement is built once this execution is done, not beside it:
	// on a busy machine the two would share the cores.
	defer p.refill()
	// A jail that ended on its own (its command reported and is exiting)
	// is left to end: init reaps the command and says what it cost
	// (jail.TotalUsage). Any other is killed.
	endedOwn := false
	defer func() {
		if !endedOwn {
			w.cancel()
		}
	}()

	job.Caller.Language = l.Name
	// The jail's span: from the take to the program's start, warm if the
	// jail was ready then; the program's after it.
	parent := trace.ContextWithSpanContext(ctx, job.Caller.Trace)
	_, jailSpan := tracing.Tracer().Start(parent, "jail", trace.WithAttributes(attribute.Bool("crucible.warm", warm), attribute.String("crucible.language", l.Name)))
	endJail := sync.OnceFunc(func() { jailSpan.End() })
	defer endJail()
	w.x.begin(programRecord(l.Name, job.Source), job.Caller)
	j := w.running(ctx) // nil: it never got to run, or ctx ended first (see below)
	var in *os.File
	if j != nil {
		in = j.Stdin()
	}
	if in != nil && p.o.Workspaces {
		if own, err := w.bind(ctx, j, job); own || err != nil {
			_ = in.Close()
			if own {
				endedOwn = true
				return w.finish() // the worker's end says why
			}
			w.cancel()
			<-w.ended
			return w.x.finish(nil, err)
		}
	}
	endJail()
	_, progSpan := tracing.Tracer().Start(parent, "program")
	defer progSpan.End()
	// The timeout starts with the job. A job an empty pipe takes at once
	// goes first, so the worker has it before the jail's timer wakes;
	// a larger one may wait for the worker to read, under the timeout.
	small := len(input) <= pipeBuf
	if !small && j != nil {
		j.Begin()
	}
	if in != nil {
		// Written here, straight into the worker's stdin; a write that
		// waits ends with the jail (its timeout, or ctx's end here).
		stop := context.AfterFunc(ctx, w.cancel)
		_, _ = in.Write(input)
		_ = in.Close()
		stop()
	}
	if small && j != nil {
		j.Begin()
	}
	// The result goes back before the jail's teardown, which the jail's
	// goroutine finishes on its own (Close waits for it).
	select {
	case <-w.ended:
		endedOwn = true
	case <-ctx.Done():
		w.cancel()
		<-w.ended
		return w.x.finish(nil, ctx.Err())
	}
	return w.finish()
}

// errUntaken is an execution's whose worker ended before it took its job,
// saying nothing: nothing of the program ran, so Do runs it again, once,
// in another jail (a worker that died while it waited, and the pool had
// not seen it yet).
var errUntaken = errors.New("sandbox: the jail's worker ended before it took the program, and nothing of it ran: run it again")

// finish is the outcome of w's execution, once its jail has ended on its
// own: errUntaken if its worker ended before it took the job and
// reported nothing.
func (w *warmJail) finish() (*Result, error) {
	if w.err == nil && w.x.report.Len() == 0 && !closed(w.taken) {
		return w.x.finish(nil, errUntaken)
	}
	return w.x.finish(w.res, w.err)
}

// closed says whether c is closed.
func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// running returns w's jail once it runs: nil if it ended before, or ctx
// did.
func (w *warmJail) running(ctx context.Context) *jail.Jail {
	select {
	case <-w.started:
		return w.j
	case <-w.ended:
	case <-ctx.Done():
	}
	return nil
}

// bind binds job's workspace (and the client's saved skills) into j, w's
// jail, once its worker waits for its job (a jail taken while it starts
// is not ready yet): nothing it did before reaches the workspace, and it
// reads the job only once the workspace is there. own says that the jail
// ended on its own first; err, that the bind failed, or ctx ended.
func (w *warmJail) bind(ctx context.Context, j *jail.Jail, job Job) (own bool, err error) {
	stop := context.AfterFunc(ctx, w.cancel)
	select {
	case <-w.ready:
		err = j.Bind(job.Workspace, lateSkills(job.SavedSkills)...)
		stop()
		if err != nil && ctx.Err() != nil {
			err = ctx.Err() // its kill failed the bind
		}
		return false, err
	case <-w.ended:
		stop()
		return ctx.Err() == nil, ctx.Err()
	}
}

// take returns a ready jail for a program in language, dropping any that
// died waiting, or starts one. It counts the caller in p.wg, so that Close
// waits for it; on a closed pool it returns ErrPoolClosed.
func (p *Pool) take(language string) (*warmJail, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPoolClosed
	}
	p.wg.Add(1)
	// The newest jail that is ready, else the oldest still starting: it is
	// the nearest to ready. The newest, not the oldest: the memory it
	// touched last is the likeliest still warm, and an idle pool's p50 was
	// ~0.25 ms lower so (bench/README.md); the older ones wait for a
	// burst, or expire.
	pick := -1
	keep := p.ready[:0]
	for _, w := range p.ready {
		select {
		case <-w.ended: // it could not be built, or died: its error is counted
			w.cancel()
			continue
		default:
		}
		if w.isReady() {
			pick = len(keep)
		}
		keep = append(keep, w)
	}
	p.ready = keep
	if len(p.ready) == 0 {
		p.miss(language)
		return p.start(), nil
	}
	if pick < 0 {
		pick = 0
		p.miss(language)
	} else {
		p.stats.warm.Add(1)
	}
	w := p.ready[pick]
	p.ready = append(p.ready[:pick], p.ready[pick+1:]...)
	return w, nil
}

// miss counts a program in language that found no jail ready. The caller
// holds p.mu.
func (p *Pool) miss(language string) {
	p.stats.cold.Add(1)
	if p.stats.misses == nil {
		p.stats.misses = map[string]int64{}
	}
	p.stats.misses[language]++
}

// refill builds jails in the background until Size are ready or coming.
func (p *Pool) refill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && len(p.ready)+p.filling < p.o.Size {
		p.filling++
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.mu.Lock()
			defer p.mu.Unlock()
			p.filling--
			if !p.closed {
				p.ready = append(p.ready, p.start())
			}
		}()
	}
}

// start starts a jail running the worker, which waits for its input. The
// caller holds p.mu and has seen the pool open, so the jail's goroutine is
// counted in p.wg before Close can wait.
func (p *Pool) start() *warmJail {
	ctx, cancel := context.WithCancel(p.ctx)
	w := &warmJail{born: time.Now(), ready: make(chan struct{}), taken: make(chan struct{}), cancel: cancel,
		started: make(chan struct{}), ended: make(chan struct{}), done: make(chan struct{})}
	w.x = newExecution(programSpec(&p.cfg.Sandbox, p.prog), Options{Audit: p.o.Audit, Tools: p.o.Tools, Secrets: p.o.Secrets, Skills: p.o.Skills}, p.prog)
	w.x.spec.StdinPipe = true // runIn writes the job into it
	w.x.endOnReport(p.prog)
	if p.lang.Warm.SaysReady {
		w.x.spec.Result = &workerMarks{w: w.x.spec.Result, marks: []mark{{lang.ReadyMark, w.ready}, {lang.TakenMark, w.taken}}}
	} else {
		close(w.ready)
		close(w.taken)
	}
	w.x.spec.Late = p.o.Workspaces
	// Attached here, not in the goroutine: Run's begin reads what attach
	// sets. (It only compiles the policy; the network is built in the jail.)
	if w.err = w.x.err; w.err == nil {
		w.err = w.x.attach(p.cfg)
	}
	if w.err != nil {
		w.x.release()
		p.stats.failed.Add(1)
		var se *jail.SetupError
		if errors.As(w.err, &se) {
			p.stats.lastFailure.Store(se)
		}
		close(w.ended)
		close(w.done)
		return w
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer cancel()
		err := w.run(ctx)
		w.x.release() // a jail that expired unused has no finish to do it
		var se *jail.SetupError
		if errors.As(err, &se) {
			p.stats.failed.Add(1)
			p.stats.lastFailure.Store(se)
		}
		close(w.done)
	}()
	return w
}

// run starts w's jail and runs it to its end: its outcome is w's as soon
// as it is known (ended), and the jail's teardown follows. It returns the
// outcome's error.
func (w *warmJail) run(ctx context.Context) error {
	j, err := startJail(ctx, w.x.spec, w.x.network)
	if err != nil {
		w.err = err
		close(w.ended)
		return err
	}
	w.j = j
	close(w.started)
	w.res, w.err = j.Wait()
	close(w.ended)
	_, err = j.Close() // the same outcome; and a stdin pipe no execution took is closed
	return err
}

// expire destroys ready jails older than Idle: an idle pool empties, and
// fills again with its next execution.
func (p *Pool) expire() {
	defer p.wg.Done()
	ticks := p.o.ticks
	if ticks == nil {
		t := time.NewTicker(max(p.o.Idle/4, 10*time.Millisecond))
		defer t.Stop()
		ticks = t.C
	}
	for {
		var now time.Time
		select {
		case <-p.ctx.Done():
			return
		case now = <-ticks: // a ticker's tick is the time it fired
		}
		p.mu.Lock()
		keep := p.ready[:0]
		for _, w := range p.ready {
			if now.Sub(w.born) > p.o.Idle {
				w.cancel()
				p.stats.expired.Add(1)
				continue
			}
			keep = append(keep, w)
		}
		p.ready = keep
		p.mu.Unlock()
	}
}

// Stats reports the pool's state and counts.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	ready := 0
	for _, w := range p.ready {
		if w.isReady() {
			ready++
		}
	}
	misses := maps.Clone(p.stats.misses)
	p.mu.Unlock()
	return PoolStats{
		Ready: ready, InFlight: len(p.slots), Misses: misses,
		Warm: p.stats.warm.Load(), Cold: p.stats.cold.Load(),
		Expired: p.stats.expired.Load(), Failed: p.stats.failed.Load(),
	}
}

// Failure is why the last jail the pool could not build failed, or nil:
// until a jail is ready, why none will be.
func (p *Pool) Failure() *jail.SetupError { return p.stats.lastFailure.Load() }

// Close destroys every jail of the pool and waits until they are gone.
// Executions in flight end with an error.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	p.ready = nil
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// isReady says whether the jail's worker waits for work, warmed, now.
func (w *warmJail) isReady() bool {
	select {
	case <-w.ended:
		return false
	case <-w.ready:
		return true
	default:
		return false
	}
}

// pipeBuf is what an empty pipe takes without blocking: POSIX's PIPE_BUF,
// Linux's smallest pipe (a page).
const pipeBuf = 4096

// workerMarks passes the worker's fd 3 on, but for the marks that begin
// it (lang.ReadyMark, then lang.TakenMark), each of which closes its
// channel instead. Its writes come from one goroutine, the jail's copy of
// fd 3.
type workerMarks struct {
	w     io.Writer
	marks []mark // those still to come, in order
}

// mark is one byte that a worker writes on fd 3, and what it closes.
type mark struct {
	b    byte
	seen chan struct{}
}

func (m *workerMarks) Write(b []byte) (int, error) {
	n := len(b)
	for len(m.marks) > 0 && len(b) > 0 {
		if b[0] != m.marks[0].b {
			m.marks = nil // the rest is the outcome
			break
		}
		close(m.marks[0].seen)
		m.marks, b = m.marks[1:], b[1:]
	}
	if len(b) > 0 {
		if _, err := m.w.Write(b); err != nil {
			return 0, err
		}
	}
	return n, nil
}
