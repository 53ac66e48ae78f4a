package main

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestProcCPUMicros_GrowsWithWork(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc is Linux's")
	}
	before, err := procCPUMicros(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		x := 0
		for i := range 10_000_000 {
			x += i
		}
		_ = x
		if after, _ := procCPUMicros(os.Getpid()); after-before >= 20_000 {
			return // 20 ms of CPU seen: two ticks at least
		}
	}
	t.Fatal("5 s of work showed no CPU time in /proc/self/stat")
}
