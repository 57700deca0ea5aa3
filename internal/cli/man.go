package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
)

// ManPage is crucible(1) in roff, for the packages: the usage, then each
// command's help as its -h prints it, so that the page never drifts from
// the flags. date is the page's date (YYYY-MM-DD).
func ManPage(date string) string {
	help := func(args ...string) string {
		var out bytes.Buffer
		Run(context.Background(), args, Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: io.Discard})
		return out.String()
	}
	var b strings.Builder
	b.WriteString(`.TH CRUCIBLE 1 "` + date + `" "crucible ` + roff(Version) + `" "User Commands"
.SH NAME
crucible \- run untrusted code in a fresh, fail-closed Linux sandbox
.SH SYNOPSIS
.nf
` + roffLines(help("help")) + `.fi
.SH DESCRIPTION
Crucible runs code that an AI wrote in a fresh jail: its own namespaces, a
read-only root, no capabilities, seccomp, Landlock and cgroup limits, and
nothing of the host that the operator did not hand it. Agents reach it as an
MCP server (\fBcrucible serve\fR); their programs call the tools of other MCP
servers and the HTTP APIs the operator allows, and never hold a real
credential.
.PP
Started by a user other than root, crucible runs as root of a user namespace
of its own (with the user's range in /etc/subuid, if there is one).
\fBcrucible doctor\fR says what this host supports and how to fix what it
lacks.
.SH COMMANDS
`)
	for _, c := range []string{"exec", "run", "serve", "tools", "login", "logout", "doctor"} {
		b.WriteString(".SS \"crucible " + c + "\"\n.nf\n" + roffLines(help(c, "-h")) + ".fi\n")
	}
	b.WriteString(`.SH FILES
.TP
.I ~/.config/crucible/crucible.yaml
The user's configuration (or $XDG_CONFIG_HOME/crucible/crucible.yaml).
.TP
.I ~/.local/state/crucible/
The tokens of \fBcrucible login\fR (or $XDG_STATE_HOME/crucible; root's in
/var/lib/crucible), one file per server, readable by the user alone.
.TP
.I /etc/crucible/crucible.yaml
The configuration of the packaged service (crucible.service).
.TP
.I /etc/apparmor.d/crucible
The AppArmor profile that lets crucible make user namespaces where
kernel.apparmor_restrict_unprivileged_userns=1.
.SH SEE ALSO
The README: https://github.com/cruciblehq/crucible
`)
	return b.String()
}

// roff escapes s for running text.
func roff(s string) string { return strings.ReplaceAll(s, `\`, `\e`) }

// roffLines escapes text for a no-fill block: backslashes, and lines that
// would read as requests.
func roffLines(text string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if line == "" {
			continue
		}
		line = roff(line)
		if strings.HasPrefix(line, ".") || strings.HasPrefix(line, "'") {
			line = `\&` + line
		}
		b.WriteString(line)
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
	return b.String()
}
