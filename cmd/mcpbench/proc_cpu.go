package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The CPU a process spends per request is steadier on a shared machine
// than its throughput: a middle process (the gateway, or a bare reverse
// proxy as the baseline) is sampled from /proc/<pid>/stat (user + system
// time) at the start and the end of the measured window, and the
// difference divided by the requests of the window. Linux only; elsewhere
// the figure is absent.

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// procCPUMicros is a process's user + system CPU time so far, in µs.
func procCPUMicros(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: fields are counted
	// after its closing parenthesis. utime and stime are fields 14, 15.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times", pid)
	}
	return (utime + stime) * 1_000_000 / clockTicks, nil
}
