//go:build !linux

package owncgroup

// Paths: there are no cgroups off Linux.
func Paths() (map[string]string, error) { return map[string]string{}, nil }

// V2: there are no cgroups off Linux.
func V2() string { return "" }

// WantScope: there is no systemd to ask off Linux.
func WantScope() (manager, v2 string) { return "", "" }
