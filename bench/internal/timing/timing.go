// Package timing is what the benchmarks share: run commands in turn, so
// that drift in the machine's speed hits all alike, and report medians,
// p95 and ratios.
package timing

import (
	"fmt"
	"slices"
	"time"
)

// Alternate runs each of order n times, in turn, timing each run of run.
// The durations come back sorted, by name.
func Alternate(order []string, n int, run func(name string)) map[string][]time.Duration {
	times := map[string][]time.Duration{}
	for i := 0; i < n; i++ {
		for _, name := range order {
			start := time.Now()
			run(name)
			times[name] = append(times[name], time.Since(start))
		}
	}
	for _, t := range times {
		slices.Sort(t)
	}
	return times
}

// Pct is the p-th percentile of sorted durations.
func Pct[T time.Duration | float64](sorted []T, p int) T {
	return sorted[(len(sorted)-1)*p/100]
}

// Table prints a row of median, p95 and min per name, under a header,
// each line led by indent.
func Table(indent string, width int, order []string, times map[string][]time.Duration) {
	fmt.Printf("%s%-*s %10s %10s %10s\n", indent, width, "command", "median", "p95", "min")
	for _, name := range order {
		t := times[name]
		fmt.Printf("%s%-*s %10s %10s %10s\n", indent, width, name, round(Pct(t, 50)), round(Pct(t, 95)), round(t[0]))
	}
}

// Ratio is a/b at the median and at p95, as "median 1.23, p95 1.45".
func Ratio(a, b []time.Duration) string {
	return fmt.Sprintf("median %.2f, p95 %.2f", float64(Pct(a, 50))/float64(Pct(b, 50)), float64(Pct(a, 95))/float64(Pct(b, 95)))
}

func round(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
