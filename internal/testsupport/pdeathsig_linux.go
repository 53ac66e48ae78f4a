package testsupport

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill a child process when the test binary
// dies (for example on a `go test -timeout`), so no gateway outlives it.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
