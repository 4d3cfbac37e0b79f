package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
)

// A dataDir error is the config's fault (exit 2) and keeps its cause:
// errors.Is sees both ErrConfig and the system error (review §2 "Errors":
// dataDirErr wrapped with %v, which broke the chain), and errors.As gives
// the message without the sentinel's prefix for `tailfeed run` to print.
func TestDataDirErrorKeepsItsCause(t *testing.T) {
	base := t.TempDir()
	dataDir := filepath.Join(base, "state")
	os.MkdirAll(filepath.Join(dataDir, "LOCK"), 0o700) // opening it for writing: EISDIR
	os.Chmod(dataDir, 0o700)
	in := filepath.Join(base, "in.log")
	os.WriteFile(in, nil, 0o600)
	cfgPath := filepath.Join(base, "tailfeed.yaml")
	os.WriteFile(cfgPath, []byte("dataDir: "+dataDir+"\nstatus: {listen: \"127.0.0.1:0\"}\nfeeds:\n  - {name: app, path: "+in+"}\nprocessors:\n  - {name: d, feed: app, type: discard}\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg, hclog.NewNullLogger())
	if err == nil {
		d.closeAll()
		t.Fatal("New accepted a LOCK that is a directory")
	}
	if !errors.Is(err, ErrConfig) || !errors.Is(err, syscall.EISDIR) {
		t.Errorf("errors.Is(err, ErrConfig) = %v, errors.Is(err, EISDIR) = %v; err %v",
			errors.Is(err, ErrConfig), errors.Is(err, syscall.EISDIR), err)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("errors.As(%v, *ConfigError) = false", err)
	}
	if want := cfgPath + ":1: dataDir: "; !strings.HasPrefix(ce.Error(), want) {
		t.Errorf("ConfigError = %q, want it to start with %q", ce.Error(), want)
	}
}
