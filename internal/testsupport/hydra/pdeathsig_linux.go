package hydra

import (
	"os/exec"
	"syscall"
)

// dieWithParent: no Hydra outlives the test binary.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
