//go:build !unix

package testsupport

import "errors"

// Pause needs SIGSTOP, which this platform does not have.
func (s *RedisServer) Pause() error { return errors.ErrUnsupported }

// Resume needs SIGCONT, which this platform does not have.
func (s *RedisServer) Resume() error { return errors.ErrUnsupported }
