package sandbox

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/cruciblehq/crucible/lang"
)

// A ready jail is one whose worker waits, warmed: the pool counts it so
// only once the worker's mark has arrived on fd 3, which the outcome never
// sees, and an execution then finds it warm.
func TestPoolReady(t *testing.T) {
	p := jsPool(t, PoolOptions{Size: 2}, 0)
	defer p.Close()
	deadline := time.Now().Add(30 * time.Second)
	for p.Stats().Ready < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no worker said it was ready: %+v", p.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	x, err := p.Do(context.Background(), Job{Source: []byte("return 1"), File: "main.ts"})
	if err != nil || string(x.Result) != "1" || x.Error != nil || x.ExitCode != 0 {
		t.Fatalf("%v %+v", err, x)
	}
	if st := p.Stats(); st.Warm != 1 || st.Cold != 0 {
		t.Errorf("the execution did not count as warm: %+v", st)
	}
}

// The pool hands work to a jail that is ready before one still starting,
// whatever their order, and takes a starting one only when none is ready.
func TestPoolTakesReadyFirst(t *testing.T) {
	jail := func(ready bool) *warmJail {
		w := &warmJail{ready: make(chan struct{}), ended: make(chan struct{}), cancel: func() {}}
		if ready {
			close(w.ready)
		}
		return w
	}
	starting, ready, starting2 := jail(false), jail(true), jail(false)
	p := &Pool{}
	p.ready = []*warmJail{starting, ready, starting2}
	if st := p.Stats(); st.Ready != 1 {
		t.Errorf("Ready %d, want 1 (two jails are still starting)", st.Ready)
	}
	for _, want := range []*warmJail{ready, starting, starting2} {
		w, err := p.take("ts")
		if err != nil || w != want {
			t.Fatalf("took %p (%v), want %p", w, err, want)
		}
		p.wg.Done()
	}
	if st := p.Stats(); st.Warm != 1 || st.Cold != 2 || st.Misses["ts"] != 2 {
		t.Errorf("%+v: want 1 warm, 2 cold, both ts", st)
	}
}

// The marks are taken off fd 3 only where they begin it: the ready mark
// first, the taken mark right after it.
func TestWorkerMarks(t *testing.T) {
	ready, taken := string(lang.ReadyMark), string(lang.TakenMark)
	for _, c := range []struct {
		writes       []string
		out          string
		ready, taken bool
	}{
		{[]string{ready, taken, `{"result":`, `1}`}, `{"result":1}`, true, true},
		{[]string{ready + taken + `{"result":1}`}, `{"result":1}`, true, true},
		{[]string{ready, `{"result":1}`}, `{"result":1}`, true, false},
		{[]string{`{"result":1}`, ready}, `{"result":1}` + ready, false, false},
		{[]string{"", ready + taken + taken}, taken, true, true},
		{[]string{ready}, ``, true, false},
	} {
		var b bytes.Buffer
		w := &warmJail{ready: make(chan struct{}), taken: make(chan struct{})}
		m := &workerMarks{w: &b, marks: []mark{{lang.ReadyMark, w.ready}, {lang.TakenMark, w.taken}}}
		for _, s := range c.writes {
			if n, err := m.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("%q: Write = %d, %v", c.writes, n, err)
			}
		}
		if b.String() != c.out || w.isReady() != c.ready || closed(w.taken) != c.taken {
			t.Errorf("%q: got %q ready %v taken %v, want %q ready %v taken %v", c.writes, b.String(), w.isReady(), closed(w.taken), c.out, c.ready, c.taken)
		}
	}
}
