package engine

import (
	"container/heap"
	"time"
)

// maxTimers bounds the timers a program may have pending at once.
const maxTimers = 100000

// timers are the program's pending setTimeout and setInterval callbacks, by
// due time. The callbacks themselves stay in JavaScript, by id.
type timers struct {
	q      timerQueue
	active map[int]bool // ids set and neither fired nor cleared
	seq    int
}

type timer struct {
	due time.Time
	seq int // ties fire in the order they were set
	id  int
}

func (t *timers) set(id int, d time.Duration) bool {
	if t.active == nil {
		t.active = map[int]bool{}
	}
	if len(t.active) >= maxTimers {
		return false
	}
	t.seq++
	t.active[id] = true
	heap.Push(&t.q, timer{due: time.Now().Add(d), seq: t.seq, id: id})
	return true
}

func (t *timers) cancel(id int) { delete(t.active, id) }

func (t *timers) len() int { return len(t.active) }

// next says how long until the next live timer is due.
func (t *timers) next() (time.Duration, bool) {
	for len(t.q) > 0 {
		if t.active[t.q[0].id] {
			return time.Until(t.q[0].due), true
		}
		heap.Pop(&t.q) // cleared: drop it
	}
	return 0, false
}

// pop takes the next live timer, if it was due by now and set by seq.
func (t *timers) pop(now time.Time, seq int) (int, bool) {
	if _, ok := t.next(); !ok || t.q[0].due.After(now) || t.q[0].seq > seq {
		return 0, false
	}
	id := heap.Pop(&t.q).(timer).id
	delete(t.active, id)
	return id, true
}

// fireTimer runs every timer now due, each followed by its microtasks. The
// timers those set wait for the next turn, after the tasks waiting now (by
// seq, not only by time: the clock may not have moved since now).
func (r *Runtime) fireTimer() error {
	now, seq := time.Now(), r.timers.seq
	for {
		id, ok := r.timers.pop(now, seq)
		if !ok {
			return nil
		}
		if err := r.call("timer", id); err != nil {
			return err
		}
		if _, err := r.vm.ExecutePendingJobs(); err != nil {
			return err
		}
	}
}

type timerQueue []timer

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	if q[i].due.Equal(q[j].due) {
		return q[i].seq < q[j].seq
	}
	return q[i].due.Before(q[j].due)
}
func (q timerQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *timerQueue) Push(x any)   { *q = append(*q, x.(timer)) }
func (q *timerQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}
