package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpgw/gateway/cmd/internal/app"
)

// reopenAuditOnHUP reopens the audit file on SIGHUP, the signal log
// rotation tools (logrotate's postrotate) send once they have moved the
// file: later lines go to a new file at the configured path. SIGHUP also
// reloads the config (reload.go); both listen for it.
func reopenAuditOnHUP(ctx context.Context, a *app.App, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := a.Audit.Reopen(); err != nil {
				log.Error("reopening the audit file failed; lines go to the file held until now", "error", err)
			}
		}
	}
}
