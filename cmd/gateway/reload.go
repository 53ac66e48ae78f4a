package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"syscall"
	"time"

	"github.com/mcpgw/gateway/cmd/internal/app"
	"github.com/mcpgw/gateway/internal/config"
)

// watchConfig reloads the config file on SIGHUP and whenever its content
// changes (checked every interval; 0 disables polling). Only
// virtual_hosts take effect without a restart; a reload with other changes
// says so. A bad file is logged and the running config kept. Every GET
// stream of a changed vhost gets list_changed notifications. current is
// the config the gateway started with: loading the file again here would
// read and compile every OpenAPI description a second time (GitHub's
// takes seconds and hundreds of megabytes).
func watchConfig(ctx context.Context, path string, current *config.Config, interval time.Duration, a *app.App, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	last := fileHash(path)
	reload := func(reason string) {
		cfg, err := config.Load(path)
		if err != nil {
			log.Error("config reload failed; keeping the running config", "reason", reason, "error", err)
			return
		}
		changed := a.Router.Reload(cfg.VirtualHosts)
		a.Sessions.VHostsChanged(changed)
		log.Info("config reloaded", "reason", reason, "changed_vhosts", changed)
		if current != nil && !sameOutsideVHosts(current, cfg) {
			log.Warn("config changes outside virtual_hosts need a restart to take effect")
		}
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			last = fileHash(path)
			reload("SIGHUP")
		case <-tick:
			if h := fileHash(path); h != nil && !bytes.Equal(h, last) {
				last = h
				reload("file changed")
			}
		}
	}
}

func fileHash(path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	h := sha256.Sum256(data)
	return h[:]
}

// sameOutsideVHosts compares the settings a reload cannot apply.
func sameOutsideVHosts(a, b *config.Config) bool {
	return a.SessionTTL == b.SessionTTL && a.MaxBodyBytes == b.MaxBodyBytes &&
		slices.Equal(a.AllowedHosts, b.AllowedHosts) && slices.Equal(a.AllowedOrigins, b.AllowedOrigins) &&
		reflect.DeepEqual(a.Auth, b.Auth) && bytes.Equal(a.CursorSecret, b.CursorSecret) &&
		a.Store == b.Store && a.Server == b.Server && a.MaxBatch == b.MaxBatch && a.Limits == b.Limits && a.MaxPageItems == b.MaxPageItems
}
