package config

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// envNameRE is a portable environment variable name.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// minSecretBytes is the shortest accepted signing secret (RFC 7518 §3.2:
// an HS256 key must be at least as long as its 256-bit hash output).
const minSecretBytes = 32

// expandEnv replaces every ${NAME} in s with the value of environment
// variable NAME (os.LookupEnv). A '$' not followed by '{' is kept as is.
// An unset variable, an unterminated reference or a bad name is an error
// that names the variable but never holds any value, neither s nor the
// variable's.
func expandEnv(s string) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		rest := s[i+2:]
		j := strings.IndexByte(rest, '}')
		if j < 0 {
			return "", fmt.Errorf("unterminated ${ in the value")
		}
		name := rest[:j]
		if !envNameRE.MatchString(name) {
			return "", fmt.Errorf("${...} in the value holds an invalid variable name")
		}
		val, ok := os.LookupEnv(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		b.WriteString(val)
		s = rest[j+1:]
	}
}

// secretEnv reads a secret from the environment variable named at path.
// It must be set, non-empty and at least minSecretBytes long. Returns nil
// (after recording an error) otherwise. The value never reaches a message.
func (v *validator) secretEnv(path, name string) []byte {
	if !envNameRE.MatchString(name) {
		v.errf(path, "%q is not an environment variable name", name)
		return nil
	}
	val, ok := os.LookupEnv(name)
	switch {
	case !ok:
		v.errf(path, "environment variable %s is not set", name)
		return nil
	case val == "":
		v.errf(path, "environment variable %s is empty", name)
		return nil
	case len(val) < minSecretBytes:
		v.errf(path, "environment variable %s is too short: a secret needs at least %d bytes", name, minSecretBytes)
		return nil
	}
	return []byte(val)
}
