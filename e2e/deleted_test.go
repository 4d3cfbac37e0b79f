package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

const deletedConfig = `dataDir: ./state
status:
  listen: {{ADDR}}
feeds:
  - name: app
    path: ./in.log
    pollIntervalMillis: 20
    rotateWaitMillis: 300
processors:
  - name: archive
    feed: app
    type: file
    path: ./out.log
`

// lossCounters is the part of a feed's report this test reads.
type lossCounters struct {
	Feeds []struct {
		State     string  `json:"state"`
		LostTails uint64  `json:"lostTails"`
		LostBytes uint64  `json:"lostBytes"`
		Lossless  bool    `json:"lossless"`
		Settled   bool    `json:"settled"`
		Detail    *string `json:"detail"`
	} `json:"feeds"`
}

func (d *daemon) losses() lossCounters {
	d.t.Helper()
	code, body, err := d.get("/feed.status")
	if err != nil || code != 200 {
		d.t.Fatalf("/feed.status: %d %v", code, err)
	}
	var c lossCounters
	if err := json.Unmarshal(body, &c); err != nil || len(c.Feeds) != 1 {
		d.t.Fatalf("/feed.status: %v: %s", err, body)
	}
	return c
}

// checkWhole requires a settled restart to report no lost tail, lossless,
// and `tailfeed status` to exit 0.
func checkWhole(t *testing.T, d *daemon, when string) {
	t.Helper()
	d.waitSettled(60 * time.Second)
	c := d.losses()
	f := c.Feeds[0]
	if f.LostTails != 0 || f.LostBytes != 0 || !f.Lossless {
		detail := ""
		if f.Detail != nil {
			detail = *f.Detail
		}
		t.Fatalf("%s: lostTails %d lostBytes %d lossless %v (detail %q); want 0 0 true",
			when, f.LostTails, f.LostBytes, f.Lossless, detail)
	}
	if out, errOut, code := cli(t, "status", "--addr", d.addr); code != 0 {
		t.Fatalf("%s: tailfeed status exit %d, want 0\n%s%s", when, code, out, errOut)
	}
}

// Issue 11 item 5 (DESIGN §4): a file read to its end, committed and then
// deleted is not a lost tail after a SIGTERM (the deletion not even seen
// yet when the signal comes).
func TestDeletedFullyReadFileSigterm(t *testing.T) {
	e := newEnv(t, deletedConfig)
	in := newInput(t, e.path("in.log"))
	in.appendLines(200)
	d := e.start()
	d.waitSettled(60 * time.Second)
	if err := os.Remove(in.path); err != nil {
		t.Fatal(err)
	}
	d.stop()
	if rec, _ := showPointer(t, e.path("state/feeds/app.ptr")); rec.FileKey != strings.Repeat("0", 16) || rec.Offset != 0 {
		t.Errorf("pointer after SIGTERM with the deleted file read: %+v, want an empty record", rec)
	}
	d = e.start()
	checkWhole(t, d, "restart after SIGTERM")
	d.stop()
}

// The same after a kill -9, once the feed settled after the deletion
// (WAITING_FOR_FILE: the file closed, the pointer emptied); a file that
// appears later is read, and the epochs file names every epoch.
func TestDeletedFullyReadFileKill9(t *testing.T) {
	e := newEnv(t, deletedConfig)
	in := newInput(t, e.path("in.log"))
	in.appendLines(100)
	d := e.start()
	d.waitSettled(60 * time.Second)
	if err := os.Remove(in.path); err != nil {
		t.Fatal(err)
	}
	d.waitFor("WAITING_FOR_FILE and settled", 60*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].State == "WAITING_FOR_FILE"
	})
	d.kill()
	if rec, _ := showPointer(t, e.path("state/feeds/app.ptr")); rec.FileKey != strings.Repeat("0", 16) || rec.Offset != 0 {
		t.Errorf("pointer after kill -9 with the deleted file committed: %+v, want an empty record", rec)
	}
	d = e.start()
	checkWhole(t, d, "restart after kill -9")
	in = newInput(t, e.path("in.log"))
	in.appendLines(10)
	d.waitFor("the new file read", 60*time.Second, func(r *report) bool {
		return r.Settled && r.Feeds[0].Sequence == 10
	})
	d.stop()

	data, err := os.ReadFile(e.path("state/feeds/app.epochs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, why := range []string{`"reason":"created"`, `"reason":"adopted"`, `"reason":"forgotten"`} {
		if !strings.Contains(string(data), why) {
			t.Errorf("epochs file lacks a %s line:\n%s", why, data)
		}
	}
	if st, err := os.Stat(e.path("state/feeds/app.epochs")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("epochs file: %v; want mode 0600", err)
	}
}
