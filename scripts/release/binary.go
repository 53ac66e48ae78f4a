// What a shipped binary must be, read from the file alone so binaries of
// every platform can be checked on one machine: the executable format
// and CPU of its platform, no dynamic loader on Linux, and the build
// settings the Go toolchain records (platform, cgo off, -trimpath, the
// release version stamped at link time).
package main

import (
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"debug/macho"
	"fmt"
	"os"
	"strings"
)

// checkBinary checks bin against its platform p and the release version
// and commit ("": not checked),
// and returns its build information.
func checkBinary(bin string, p platform, version, commit, mainPkg string) (*buildinfo.BuildInfo, error) {
	if err := checkHeader(bin, p); err != nil {
		return nil, err
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("build info: %w", err)
	}
	if bi.Path != mainPkg {
		return nil, fmt.Errorf("built from %s, want %s", bi.Path, mainPkg)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	want := map[string]string{"GOOS": p.goos, "GOARCH": p.goarch, "CGO_ENABLED": "0", "-trimpath": "true"}
	for k, v := range want {
		if settings[k] != v {
			return nil, fmt.Errorf("build setting %s=%q, want %q", k, settings[k], v)
		}
	}
	if err := checkStamped(bin, bi, version, commit); err != nil {
		return nil, err
	}
	return bi, nil
}

// checkStamped checks that version and commit were stamped at link time
// (-X main.version, -X main.commit). With -trimpath the toolchain does not
// record -ldflags, so the file is searched: the commit (a full hash) must
// be in it, and the version more often than the module list the toolchain
// embeds names it (a dependency may share the release's version).
func checkStamped(bin string, bi *buildinfo.BuildInfo, version, commit string) error {
	data, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	if bytes.Count(data, []byte(version)) <= strings.Count(bi.String(), version) {
		return fmt.Errorf("version %s is not stamped into the binary (-X main.version)", version)
	}
	if commit != "" && !bytes.Contains(data, []byte(commit)) {
		return fmt.Errorf("commit %s is not stamped into the binary (-X main.commit)", commit)
	}
	return nil
}

// checkHeader checks the executable format and CPU of bin for p; a Linux
// binary must also be static (no program interpreter).
func checkHeader(bin string, p platform) error {
	switch p.goos {
	case "linux":
		f, err := elf.Open(bin)
		if err != nil {
			return fmt.Errorf("not an ELF executable: %w", err)
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				return fmt.Errorf("dynamically linked (it has a program interpreter): want a static binary")
			}
		}
		machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.goarch]
		if f.Class != elf.ELFCLASS64 || f.Machine != machine || f.Type != elf.ET_EXEC {
			return fmt.Errorf("ELF %v %v %v, want a 64-bit %v executable", f.Class, f.Machine, f.Type, machine)
		}
	case "darwin":
		f, err := macho.Open(bin)
		if err != nil {
			return fmt.Errorf("not a Mach-O executable: %w", err)
		}
		defer f.Close()
		cpu := map[string]macho.Cpu{"amd64": macho.CpuAmd64, "arm64": macho.CpuArm64}[p.goarch]
		if f.Cpu != cpu || f.Type != macho.TypeExec {
			return fmt.Errorf("Mach-O %v %v, want a %v executable", f.Cpu, f.Type, cpu)
		}
	default:
		return fmt.Errorf("no header check for %s", p.goos)
	}
	return nil
}
