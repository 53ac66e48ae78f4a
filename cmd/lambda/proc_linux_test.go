package main

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts cmd in a process group of its own, so that
// killProcessGroup ends the children it starts too, and kills it if the
// test binary dies first.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
