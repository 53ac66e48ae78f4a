// Reproducible archives: a release built twice from the same commit with
// the same toolchain must give the same bytes, so a user (or a second
// builder) can check it against the published checksums.
package main

import (
	"archive/tar"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// writeArchive packs dir into a .tar.gz at out, under a top folder named
// after dir. Entries are sorted, owned by 0:0 with no user or group name,
// dated mtime, with modes 0755 (executables) or 0644; the gzip header
// carries no name or time. Nothing of the build machine leaks in.
func writeArchive(out, dir string, mtime int64) error {
	top := filepath.Base(filepath.Clean(dir))
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		} else if !d.IsDir() {
			return fmt.Errorf("%s: only regular files and folders go into a release archive", p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.Sort(files)
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	when := time.Unix(mtime, 0).UTC()
	for _, p := range files {
		if err := addFile(tw, dir, top, p, when); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := gz.Close(); err != nil {
		return err
	}
	return f.Close()
}

// addFile writes one file of dir as top/<path inside dir>.
func addFile(tw *tar.Writer, dir, top, p string, when time.Time) error {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return err
	}
	info, err := os.Stat(p)
	if err != nil {
		return err
	}
	mode := int64(0o644)
	if info.Mode()&0o111 != 0 {
		mode = 0o755
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     top + "/" + filepath.ToSlash(rel),
		Size:     info.Size(),
		Mode:     mode,
		ModTime:  when,
		Format:   tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	src, err := os.Open(p)
	if err != nil {
		return err
	}
	defer src.Close()
	_, err = io.Copy(tw, src)
	return err
}
