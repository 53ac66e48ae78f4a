package testsupport

import (
	"bytes"
	"sync"
)

// SyncBuffer is a bytes.Buffer that goroutines write while a test reads
// it: a process's or a logger's output, a response stream. The zero value
// is ready.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what has been written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
