package mcpserver

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"
)

// gate bounds the executions running at once. Past the bound a caller waits
// a little, then is told the server is busy: never an unbounded queue.
type gate struct {
	slots chan struct{}
	wait  time.Duration
}

func newGate(n int, wait time.Duration) *gate {
	return &gate{slots: make(chan struct{}, n), wait: wait}
}

// busyError says that every place was taken for the whole wait.
type busyError struct{ running int }

func (e busyError) Error() string {
	return fmt.Sprintf("busy: %d executions are running, the most this server runs at once; try again in a few seconds", e.running)
}

// enter takes a place, waiting up to g.wait for one; leave gives it back.
func (g *gate) enter(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-t.C:
		return busyError{cap(g.slots)}
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) leave() { <-g.slots }

func (g *gate) running() int { return len(g.slots) }

// rateLimiter is a token bucket per client: rate executions a second on
// average, burst at once. A rate of 0 lets everything through.
type rateLimiter struct {
	rate  float64
	burst float64
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time
}

// maxBuckets bounds the clients remembered; full buckets are forgotten
// first (forgetting one loses nothing).
const maxBuckets = 10000

func newRateLimiter(rate float64, burst int) *rateLimiter {
	return &rateLimiter{rate: rate, burst: float64(burst), now: time.Now, buckets: map[string]*bucket{}}
}

// rateError says when the client may try again.
type rateError struct{ retry time.Duration }

func (e rateError) Error() string {
	return fmt.Sprintf("rate limited: too many executions from this client; retry in %v", e.retry)
}

// allow takes one token of client's bucket, or says how long until there is
// one.
func (l *rateLimiter) allow(client string) error {
	if l.rate <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[client]
	if b == nil {
		if len(l.buckets) >= maxBuckets {
			l.forget(now)
		}
		b = &bucket{tokens: l.burst, at: now}
		l.buckets[client] = b
	}
	b.tokens = math.Min(l.burst, b.tokens+now.Sub(b.at).Seconds()*l.rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return nil
	}
	wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	return rateError{retry: wait.Round(time.Millisecond) + time.Millisecond}
}

// forget drops the buckets that have refilled: they hold nothing.
func (l *rateLimiter) forget(now time.Time) {
	for k, b := range l.buckets {
		if b.tokens+now.Sub(b.at).Seconds()*l.rate >= l.burst {
			delete(l.buckets, k)
		}
	}
}
