module github.com/cruciblehq/crucible

go 1.26.8

require (
	golang.org/x/sys v0.49.0
	gopkg.in/yaml.v3 v3.0.1
)

require golang.org/x/net v0.62.0

require (
	github.com/google/btree v1.1.2 // indirect
	golang.org/x/exp v0.0.0-20250711185948-6ae5c78190dc // indirect
	golang.org/x/time v0.15.0 // indirect
	gvisor.dev/gvisor v0.0.0-20260905035102-160fafc42237
)
