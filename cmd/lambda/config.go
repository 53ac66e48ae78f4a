package main

import (
	"fmt"
	"strings"

	"github.com/mcpgw/gateway/internal/config"
)

// loadConfig reads the config named by MCPGW_CONFIG (a file in the
// bundle) or given inline by MCPGW_CONFIG_YAML. Exactly one must be set:
// two sources would leave an operator guessing which one is live.
//
// Errors come from the config package and are one line naming the source
// (the file path, or "MCPGW_CONFIG_YAML") and the field.
func loadConfig(getenv func(string) string) (*config.Config, error) {
	path := strings.TrimSpace(getenv(envConfig))
	inline := getenv(envConfigYAML)
	switch {
	case path != "" && strings.TrimSpace(inline) != "":
		return nil, fmt.Errorf("both %s and %s are set; set one", envConfig, envConfigYAML)
	case path != "":
		return config.Load(path)
	case strings.TrimSpace(inline) != "":
		// Relative paths inside inline config (auth.jwt.public_key_file)
		// resolve against the working directory: the bundle root.
		return config.Parse([]byte(inline), envConfigYAML)
	default:
		return nil, fmt.Errorf("no configuration: set %s (a file in the bundle) or %s (the YAML itself)", envConfig, envConfigYAML)
	}
}
