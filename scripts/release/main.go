// Command release is the Go half of `make release` (scripts/release.sh
// builds the binaries): it packs them into archives that are the same
// bytes for the same inputs, writes SHA256SUMS, and verifies a finished
// release directory the way a user's download would be checked. Go,
// rather than tar, gzip and sha256sum, so the bytes do not depend on the
// platform's tools or their versions.
//
//	go run ./scripts/release archive -o OUT.tar.gz -mtime EPOCH DIR
//	go run ./scripts/release sums -o SHA256SUMS FILE...
//	go run ./scripts/release verify -version V [-commit SHA] DIST
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

const usage = `usage:
  release archive -o OUT.tar.gz -mtime EPOCH DIR   pack DIR (its base name the top folder)
  release sums -o SHA256SUMS FILE...                  write sha256sum-style checksums
  release verify -version V [-commit SHA] DIST       check a release directory`

func run(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	out := fs.String("o", "", "output file")
	mtime := fs.String("mtime", "", "modification time of every entry, seconds since 1970 (SOURCE_DATE_EPOCH)")
	version := fs.String("version", "", "the release version the artifacts must carry")
	commit := fs.String("commit", "", "the commit the binaries must be stamped with (optional)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "archive":
		if *out == "" || fs.NArg() != 1 {
			return errors.New(usage)
		}
		sec, err := strconv.ParseInt(*mtime, 10, 64)
		if err != nil {
			return fmt.Errorf("-mtime %q: want seconds since 1970", *mtime)
		}
		return writeArchive(*out, fs.Arg(0), sec)
	case "sums":
		if *out == "" || fs.NArg() == 0 {
			return errors.New(usage)
		}
		return writeSums(*out, fs.Args())
	case "verify":
		if *version == "" || fs.NArg() != 1 {
			return errors.New(usage)
		}
		return verify(stdout, fs.Arg(0), *version, *commit)
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}
