package file

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

type reopenCheckpoint struct{ mark, durable uint64 }

func (c *reopenCheckpoint) Hold()                   {}
func (c *reopenCheckpoint) Mark() uint64            { return c.mark }
func (c *reopenCheckpoint) DurableThrough(m uint64) { c.durable = max(c.durable, m) }

// A plain file sink whose output is renamed away (logrotate's `create`) or
// removed writes its next batch to a new file at its path (mode kept), at
// most reopenEvery after the change, the old file keeping what it had
// (synced first under interval); before, it wrote on to the renamed file
// for ever (audit: even a reload did not reopen it). An exactlyOnce output
// is not followed: its record is about the file it opened.
func TestFileSinkReopensRenamedOrRemovedOutput(t *testing.T) {
	for _, mode := range []FsyncMode{FsyncNever, FsyncInterval, FsyncAlways} {
		for _, how := range []string{"renamed", "removed"} {
			t.Run(how, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "out.log")
				cp := &reopenCheckpoint{}
				s, err := Open(Config{Path: path, Fsync: mode, Interval: time.Hour, Checkpoint: cp, Mode: 0o600})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				cp.mark = 1
				mustProcess(t, s, eoBatch(1, 0, "a"))
				switch how {
				case "renamed":
					if err := os.Rename(path, path+".1"); err != nil {
						t.Fatal(err)
					}
				case "removed":
					os.Remove(path)
				}
				cp.mark = 2
				mustProcess(t, s, eoBatch(1, 2, "b")) // within reopenEvery: the old file still
				s.checkedAt = time.Now().Add(-reopenEvery)
				cp.mark = 3
				mustProcess(t, s, eoBatch(1, 4, "c"))
				if mode == FsyncInterval {
					if err := s.Flush(t.Context()); err != nil {
						t.Fatal(err)
					}
					if cp.durable != 3 {
						t.Errorf("durable through %d, want 3", cp.durable)
					}
				}
				if got, _ := os.ReadFile(path); string(got) != "c\n" {
					t.Errorf("the new output holds %q, want \"c\\n\"", got)
				}
				if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("the new output: %v %v, want mode 0600", fi, err)
				}
				if how == "renamed" {
					if got, _ := os.ReadFile(path + ".1"); string(got) != "a\nb\n" {
						t.Errorf("the renamed output holds %q, want \"a\\nb\\n\"", got)
					}
				}
			})
		}
	}
	t.Run("exactlyOnce is not followed", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.log")
		s, err := Open(Config{Path: path, Record: filepath.Join(dir, "out.rec")})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		mustProcess(t, s, eoBatch(1, 0, "a"))
		os.Rename(path, path+".1")
		s.checkedAt = time.Now().Add(-reopenEvery)
		mustProcess(t, s, eoBatch(1, 2, "b"))
		if got, _ := os.ReadFile(path + ".1"); string(got) != "a\nb\n" {
			t.Errorf("the exactlyOnce output holds %q, want \"a\\nb\\n\" (written on)", got)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("a new exactlyOnce output was made at the path: %v", err)
		}
	})
}
