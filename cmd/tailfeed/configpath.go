package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// The config file `run` and `validate` read without --config (DESIGN §12
// "Environment"): $TAILFEED_CONFIG when set (it must exist: it is never
// passed over), else the first of these that exists.
var defaultConfigs = []string{"./tailfeed.yaml", "/etc/tailfeed/tailfeed.yaml"}

// configPath returns the config file to read: flag when given, else the
// lookup above; the error says where it looked.
func configPath(flag string) (string, error) {
	if strings.TrimSpace(flag) != "" {
		return flag, nil
	}
	if env := os.Getenv("TAILFEED_CONFIG"); env != "" {
		if _, err := os.Stat(env); errors.Is(err, fs.ErrNotExist) {
			// Said where the path came from (DESIGN §12: run says where it
			// looked), never passed over for the defaults.
			return "", fmt.Errorf("no config file: --config not given, and TAILFEED_CONFIG names %s, which does not exist", env)
		}
		return env, nil
	}
	for _, p := range defaultConfigs {
		if _, err := os.Stat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return p, nil // one that exists, or cannot be looked at (Load says why)
		}
	}
	return "", fmt.Errorf("no config file: --config not given, TAILFEED_CONFIG not set, and neither %s exists", strings.Join(defaultConfigs, " nor "))
}
