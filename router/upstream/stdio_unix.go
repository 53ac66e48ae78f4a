//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts a stdio backend in a process group of its own: a
// Ctrl-C at the gateway's terminal reaches the gateway, which stops its
// backends in order, rather than killing them under running calls; and
// whatever the backend starts (npx starts node) can be stopped with it.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills what is left of a reaped backend's group.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
