package stack

import (
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"
)

// A stack's size is not visible from Go, but its limit is: with the limit
// set below 64 KiB, a call whose frame needs a 64 KiB stack succeeds only
// on a stack that already is that large, and otherwise ends the process
// ("goroutine stack exceeds"). Each case runs in a process of its own.
func TestMain(m *testing.M) {
	if c := os.Getenv("STACK_TEST_CASE"); c != "" {
		os.Exit(run(c))
	}
	os.Exit(m.Run())
}

func run(c string) int {
	switch c {
	case "main": // this goroutine, as this package's init left it
		deep()
	case "grown", "not grown":
		done := make(chan struct{})
		go func() {
			if c == "grown" {
				Grow(Main)
			}
			deep()
			close(done)
		}()
		<-done
	}
	return 0
}

// deep lowers the stack's limit below 64 KiB and calls what needs 64.
func deep() {
	debug.SetMaxStack(48 << 10)
	frame[[56 << 10]byte](false)
}

func runCase(t *testing.T, c string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "STACK_TEST_CASE="+c)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestMainGoroutineStartsGrown(t *testing.T) {
	if out, err := runCase(t, "main"); err != nil {
		t.Fatalf("the main goroutine's stack was not grown by init: %v\n%s", err, out)
	}
}

func TestGrow(t *testing.T) {
	if out, err := runCase(t, "grown"); err != nil {
		t.Fatalf("a grown goroutine's stack could not take a 64 KiB frame: %v\n%s", err, out)
	}
	// And the check can tell: a goroutine not grown cannot.
	out, err := runCase(t, "not grown")
	if err == nil || !strings.Contains(out, "goroutine stack exceeds") {
		t.Fatalf("a goroutine not grown took a 64 KiB frame under a 48 KiB limit (err %v):\n%s", err, out)
	}
}
