package file

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Review 44 checks: a real gzip's output of the held twin, seen torn
// then complete, is dropped as the twin's copy — twin kept, unlinked, grown
// after the compression, longer than 4 KiB, empty; completed between looks
// or between the twin check and the decompression (tornLooked).
func TestTornGzRealGzipOfTheTwinDropped(t *testing.T) {
	if _, err := exec.LookPath("gzip"); err != nil {
		t.Skip("gzip not installed: the real-compressor cases skipped")
	}
	big := strings.Repeat("0123456789abcdefghijklmnopqrstuvwxyz-line\n", 250) // ~10.7 KiB
	for _, c := range []struct {
		name, content string
		after         string // "", "unlink", "grow"
		inHook        bool
	}{
		{"kept", "# hdr\nb-0\nb-1\n", "", false},
		{"unlinked", "# hdr\nb-0\nb-1\n", "unlink", false},
		{"grown", "# hdr\nb-0\nb-1\n", "grow", false},
		{"big-kept", big, "", false},
		{"big-unlinked", big, "unlink", false},
		{"big-grown", big, "grow", false},
		{"empty", "", "unlink", false},
		{"kept-hook", "# hdr\nb-0\nb-1\n", "", true},
		{"unlinked-hook", "# hdr\nb-0\nb-1\n", "unlink", true},
		{"grown-hook", "# hdr\nb-0\nb-1\n", "grow", true},
		{"big-unlinked-hook", big, "unlink", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in := filepath.Join(dir, "app.log")
			twin := in + ".1"
			if err := os.WriteFile(twin, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(in, []byte("# hdr\nc-0\n"), 0o644)
			full, err := exec.Command("gzip", "-c", twin).Output()
			if err != nil {
				t.Fatal(err)
			}
			gz := twin + ".gz"
			s := heldTwinTorn(t, in, twin, gz, full[:min(len(full)/3, 40)])
			defer s.closeAll()
			finish := func(p string) {
				if err := os.WriteFile(p, full, 0o644); err != nil {
					t.Error(err)
				}
				switch c.after {
				case "unlink":
					os.Remove(twin)
				case "grow":
					f, _ := os.OpenFile(twin, os.O_APPEND|os.O_WRONLY, 0)
					fmt.Fprintf(f, "late-0\n")
					f.Close()
				}
			}
			if c.inHook {
				tornLooked = finish
				defer func() { tornLooked = nil }()
			} else {
				finish(gz)
			}
			s.retryTorn()
			if len(s.old) != 0 || len(s.torn) != 0 || s.LostTails() != 0 {
				t.Errorf("%d read, %d torn, lostTails %d; want the twin's copy dropped", len(s.old), len(s.torn), s.LostTails())
			}
		})
	}
}
