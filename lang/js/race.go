//go:build race

package js

// workerEnv is what the worker adds to the jail's environment. Built with
// the race detector, a Go program sleeps a second as it exits unless told
// not to: every run would take a second longer.
var workerEnv = map[string]string{"GORACE": "atexit_sleep_ms=0"}
