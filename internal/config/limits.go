package config

import "time"

// The limits section bounds what one client can make the gateway hold:
// answers in flight, open listens, calls parked for client input, tasks
// running, what finished ones hold and how long one is kept. Each bound has a default,
// so an absent section is a bounded gateway.

func (v *validator) limits(raw *rawLimits) Limits {
	if raw == nil {
		raw = &rawLimits{}
	}
	return Limits{
		InflightResponseBytes:   v.byteSize("limits.inflight_response_bytes", raw.InflightResponseBytes, DefaultInflightResponseBytes, 1<<20),
		ListensPerPrincipal:     v.countLimit("limits.listens_per_principal", raw.ListensPerPrincipal, DefaultListensPerPrincipal, 1000),
		ListenURIs:              v.countLimit("limits.listen_uris", raw.ListenURIs, DefaultListenURIs, 10000),
		ParkedCallsPerPrincipal: v.countLimit("limits.parked_calls_per_principal", raw.ParkedCallsPerPrincipal, DefaultParkedCallsPerPrincipal, 1000),
		TasksPerPrincipal:       v.countLimit("limits.tasks_per_principal", raw.TasksPerPrincipal, DefaultTasksPerPrincipal, 10000),
		TaskTTLMax:              v.duration("limits.task_ttl_max", raw.TaskTTLMax, DefaultTaskTTLMax, time.Second),
		FinishedTaskBytesPerPrincipal: v.byteSize("limits.finished_task_bytes_per_principal", raw.FinishedTaskBytes,
			DefaultFinishedTaskBytesPerPrincipal, 64<<10),
	}
}

// countLimit is a count between 1 and most, def when absent.
func (v *validator) countLimit(path string, raw *int64, def, most int) int {
	if raw == nil {
		return def
	}
	if *raw < 1 || *raw > int64(most) {
		v.errf(path, "must be between 1 and %d, not %d", most, *raw)
		return def
	}
	return int(*raw)
}
