// Package brokenworker is a test's stand-in for an engine worker whose
// engine the program has broken: linked into a test binary, it takes over
// the worker of a program that starts with [Mark], does there what native
// code of the program's choosing would try, and reports each outcome on
// stdout. It runs from its init, before package worker's (which takes the
// process over once the engine has initialized, and this package imports
// nothing that late), so only a test binary that imports it has it.
package brokenworker

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/cruciblehq/crucible/lang/js"
)

// Mark, first in a program, makes the worker act as if the program had
// broken out of the engine.
const Mark = "// test: the engine is broken\n"

func init() {
	if len(os.Args) < 2 || os.Args[0] != js.Worker {
		return
	}
	src, err := os.ReadFile(os.Args[len(os.Args)-1])
	if err != nil || !strings.HasPrefix(string(src), Mark) {
		return
	}
	try := func(name string, err error) { fmt.Printf("%s\t%v\n", name, err) }
	_, err = os.ReadFile("/proc/1/environ")
	try("init environ", err)
	try("write /usr", os.WriteFile("/usr/bin/crucible-x", nil, 0o755))
	try("write self", os.WriteFile(js.Worker, nil, 0o755))
	try("mount", unix.Mount("none", "/tmp", "tmpfs", 0, ""))
	try("setuid", unix.Setuid(0))
	try("ptrace init", unix.PtraceAttach(1))
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err == nil {
		err = unix.Connect(fd, &unix.SockaddrInet4{Port: 80, Addr: [4]byte{1, 1, 1, 1}})
	}
	try("connect", err)
	status, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(status), "\n") {
		for _, k := range []string{"Uid:", "CapEff:", "NoNewPrivs:", "Seccomp:"} {
			if strings.HasPrefix(l, k) {
				fmt.Println(strings.Join(strings.Fields(l), " "))
			}
		}
	}
	os.Exit(0)
}
