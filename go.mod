module github.com/cruciblehq/crucible

go 1.26.8

require (
	golang.org/x/sys v0.49.0
	gopkg.in/yaml.v3 v3.0.1
)

require golang.org/x/net v0.62.0
