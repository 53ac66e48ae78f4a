package config

import (
	"errors"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpgw/gateway/router"
	"github.com/mcpgw/gateway/router/upstream"
)

// rawPool mirrors a stdio backend's `pool`.
type rawPool struct {
	// Processes each instance keeps running, warm. At most max.
	Min *int64 `yaml:"min" jsonschema:"default=1,minimum=0,maximum=64"`
	// The most processes each instance runs at once.
	Max *int64 `yaml:"max" jsonschema:"default=4,minimum=1,maximum=64"`
	// Spare processes idle this long are stopped (down to min). At least
	// 1s.
	Idle *rawDuration `yaml:"idle" jsonschema:"default=5m"`
}

// maxPoolSize bounds `pool.max`: each process is a program's whole
// memory, per backend and instance.
const maxPoolSize = 64

// lambdaStdioMsg says why a stdio backend cannot run on Lambda.
const lambdaStdioMsg = "transport stdio is not supported on AWS Lambda: a function keeps no processes between invocations " +
	"(and freezes them in between); run this backend as an HTTP server and give its url, or run the gateway as a server"

// stdio validates the fields of a backend with transport stdio and sets
// b.Stdio. Relative paths (a command holding a '/', cwd) are taken from
// the config file's directory, like auth.jwt.public_key_file.
func (v *validator) stdio(path string, raw *rawBackend, b *router.Backend) {
	s := &upstream.StdioConfig{Args: raw.Args, Env: map[string]string{}}
	cmd := strings.TrimSpace(raw.Command)
	switch {
	case cmd == "":
		v.errf(joinPath(path, "command"), "required for transport stdio (the program to run)")
	case strings.ContainsRune(cmd, '/'):
		// Absolute: a relative path would be taken from cwd when it is set.
		s.Command = v.fromConfigDir(cmd)
	default:
		s.Command = cmd // a name is looked up in PATH when the process starts
	}
	if raw.Cwd != "" {
		s.Dir = v.fromConfigDir(raw.Cwd)
	}
	for i, a := range raw.Args {
		if strings.ContainsRune(a, 0) {
			v.errf(indexPath(joinPath(path, "args"), i), "holds a NUL byte")
		}
	}
	for _, name := range sortedKeys(raw.Env) {
		p := joinPath(joinPath(path, "env"), name)
		if !envNameRE.MatchString(name) {
			v.errf(p, "%q is not an environment variable name", name)
			continue
		}
		val, err := expandEnv(raw.Env[name])
		if err != nil {
			v.errf(p, "%s", err.Error())
			continue
		}
		if strings.ContainsRune(val, 0) {
			v.errf(p, "the value (after ${VAR} expansion) holds a NUL byte")
			continue
		}
		s.Env[name] = val
	}
	s.Pool = v.pool(joinPath(path, "pool"), raw.Pool)

	// What only an HTTP backend has would be silently ignored.
	if strings.TrimSpace(raw.URL) != "" {
		v.errf(joinPath(path, "url"), "has no use with transport stdio (the backend is the command)")
	}
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"passthrough_headers", len(raw.PassthroughHeaders) > 0},
		{"add_headers", len(raw.AddHeaders) > 0},
		{"remove_headers", len(raw.RemoveHeaders) > 0},
		{"credentials", raw.Credentials != nil},
	} {
		if f.set {
			v.errf(joinPath(path, f.name), "has no use with transport stdio: the process gets no HTTP request (pass values in env)")
		}
	}
	if m := router.SessionMode(raw.Session); m == router.SessionReuse || m == router.SessionPerPrincipal {
		v.errf(joinPath(path, "session"), "%s has no meaning with transport stdio: processes are shared by requests in turn, never kept for one client", m)
	}
	b.Stdio = s
	v.stdioPaths = append(v.stdioPaths, joinPath(path, "transport"))
}

// fromConfigDir makes a path absolute, a relative one taken from the
// config file's directory.
func (v *validator) fromConfigDir(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(v.baseDir, p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// pool validates `pool`, applying the defaults.
func (v *validator) pool(path string, raw *rawPool) upstream.PoolConfig {
	p := upstream.PoolConfig{Min: upstream.DefaultPoolMin, Max: upstream.DefaultPoolMax, Idle: upstream.DefaultPoolIdle}
	if raw == nil {
		return p
	}
	if raw.Max != nil {
		if *raw.Max < 1 || *raw.Max > maxPoolSize {
			v.errf(joinPath(path, "max"), "must be between 1 and %d, not %d", maxPoolSize, *raw.Max)
		}
		p.Max = int(*raw.Max)
	}
	if raw.Min != nil {
		switch {
		case *raw.Min < 0:
			v.errf(joinPath(path, "min"), "must not be negative, not %d", *raw.Min)
		case *raw.Min > int64(p.Max):
			v.errf(joinPath(path, "min"), "must be at most pool.max (%d), not %d", p.Max, *raw.Min)
		}
		p.Min = int(*raw.Min)
	} else {
		p.Min = min(p.Min, p.Max)
	}
	p.Idle = v.duration(joinPath(path, "idle"), raw.Idle, upstream.DefaultPoolIdle, time.Second)
	return p
}

// stdioOnly refuses the stdio fields on a backend of another transport.
func (v *validator) stdioOnly(path string, raw *rawBackend) {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"command", raw.Command != ""},
		{"args", len(raw.Args) > 0},
		{"env", len(raw.Env) > 0},
		{"cwd", raw.Cwd != ""},
		{"pool", raw.Pool != nil},
	} {
		if f.set {
			v.errf(joinPath(path, f.name), "is only for transport stdio")
		}
	}
}

// CheckLambda reports what the configuration asks that cannot work on AWS
// Lambda (stdio backends), each error naming the file, field and line. The
// Lambda entry point refuses such a configuration at start-up.
func (c *Config) CheckLambda() error {
	return errors.Join(c.lambdaRefusals...)
}
