//go:build unix

package testsupport

import (
	"fmt"
	"syscall"
)

// Pause stops the server process (SIGSTOP), as a stalled Redis does: its
// port still accepts connections and its clients' connections stay open,
// but nothing is answered until Resume.
func (s *RedisServer) Pause() error {
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("testsupport: pause redis-server: %w", err)
	}
	return nil
}

// Resume lets a paused server run again (SIGCONT).
func (s *RedisServer) Resume() error {
	if err := s.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("testsupport: resume redis-server: %w", err)
	}
	return nil
}
