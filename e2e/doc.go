// Package e2e holds the suites that drive the whole crucible command: the
// attacks run for real in jails, serve with real MCP clients and the
// conformance suite, crucible in containers, as an unprivileged user, and
// from its .deb. It has no code of its own; its tests run the CLI in
// process (package cli) or this test binary as crucible, which TestMain
// makes it when CRUCIBLE_TEST_CLI=1 is in its environment. The commands'
// own tests (flags, usage, config search, refusals) are internal/cli's.
package e2e
