//go:build ignore

// zipbundle zips a Lambda bundle directory for `make lambda`:
//
//	go run ./cmd/lambda/zipbundle.go -o bin/lambda/gateway.zip bin/lambda
//
// It needs nothing but Go, which building the bundle needs anyway (zip is
// not on every CI image). Entries are the directory's regular files,
// sorted, with their Unix modes kept (Lambda runs bootstrap only if it is
// executable) and a fixed timestamp, so the same files give the same zip.
package main

import (
	"archive/zip"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

func main() {
	out := flag.String("o", "", "the zip file to write")
	flag.Parse()
	if *out == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: zipbundle -o OUT.zip DIR")
		os.Exit(2)
	}
	if err := zipDir(*out, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "zipbundle:", err)
		os.Exit(1)
	}
}

func zipDir(out, dir string) error {
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	var files []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if abs, _ := filepath.Abs(path); d.Type().IsRegular() && abs != absOut {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(files)
	if len(files) == 0 {
		return fmt.Errorf("%s: no files", dir)
	}

	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	zw := zip.NewWriter(f)
	for _, path := range files {
		if err := addFile(zw, dir, path); err != nil {
			f.Close()
			return err
		}
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func addFile(zw *zip.Writer, dir, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return err
	}
	h, err := zip.FileInfoHeader(st)
	if err != nil {
		return err
	}
	h.Name = filepath.ToSlash(rel)
	h.Method = zip.Deflate
	h.Modified = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(w, src)
	return err
}
