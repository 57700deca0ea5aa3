package cli

import (
	"strings"
	"testing"
)

// A secret whose source cannot be used refuses the run before anything
// starts, naming the secret's setting and never the value.
func TestSecretFlagErrors(t *testing.T) {
	const value = "sk-live-0123456789abcdef"
	t.Setenv("CRUCIBLE_TEST_SHORT", "sk-1234")
	for _, tc := range []struct{ flag, want string }{
		{"TOKEN=env:CRUCIBLE_TEST_UNSET@api.example.com", `crucible: secrets["TOKEN"].from: the environment variable CRUCIBLE_TEST_UNSET is not set, or empty`},
		{"TOKEN=env:CRUCIBLE_TEST_SHORT@api.example.com", `crucible: secrets["TOKEN"].from: the value is shorter than 8 bytes`},
		{"TOKEN=file:/nonexistent/crucible-token@api.example.com", `crucible: secrets["TOKEN"].from: the file cannot be read: no such file or directory`},
		// The value itself given by mistake, with hosts and without.
		{"TOKEN=" + value + "@api.example.com", `crucible exec: secrets["TOKEN"].from: must be env:VAR or file:/absolute/path`},
		{"TOKEN=" + value, `crucible exec: --secret: want NAME=env:VAR@HOST[,HOST] or NAME=file:/path@HOST[,HOST]`},
		{"TOKEN=env:X@*.com", `crucible exec: secrets["TOKEN"].hosts[0]: "*.com": `},
		{"PATH=env:X@api.example.com", `crucible exec: secrets["PATH"]: "PATH" is set by the sandbox itself`},
	} {
		code, out, errs := run(t, "", "exec", "--secret", tc.flag, "--", "echo", "ran")
		if code != ExitUsage || !strings.HasPrefix(errs, tc.want) || strings.Count(errs, "\n") != 1 || out != "" {
			t.Errorf("--secret %s: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.flag, code, out, errs, ExitUsage, tc.want)
		}
		if strings.Contains(errs, value) || strings.Contains(errs, "sk-1234") || strings.Contains(errs, "crucible-token") {
			t.Errorf("--secret %s: the error shows the value or the file: %q", tc.flag, errs)
		}
	}
}
