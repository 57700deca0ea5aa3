//go:build !race

package js

// workerEnv is what the worker adds to the jail's environment: nothing.
var workerEnv map[string]string
