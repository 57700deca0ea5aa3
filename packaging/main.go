// Command packaging builds crucible's .deb and .rpm packages with nfpm
// (see package internal/packages):
//
//	go run ./packaging -out dist [-version 0.1.0] [-binary FILE]
//
// Without -binary it builds crucible static first, from the repository's
// root, where it must run.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/cruciblehq/crucible/internal/cli"

	"github.com/cruciblehq/crucible/packaging/packages"
)

func main() {
	out := flag.String("out", "dist", "write the packages into this `DIR`")
	version := flag.String("version", "0.1.0", "the packages' `VERSION`")
	binary := flag.String("binary", "", "the crucible binary to package (default: built here, static)")
	flag.Parse()
	cli.Version = *version
	names, err := packages.Build(packages.Options{Out: *out, Version: *version, Binary: *binary, Man: cli.ManPage(time.Now().UTC().Format("2006-01-02"))})
	if err != nil {
		fmt.Fprintln(os.Stderr, "packaging:", err)
		os.Exit(1)
	}
	for _, n := range names {
		fmt.Println(n)
	}
}
