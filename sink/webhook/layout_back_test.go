package webhook

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// A record a glob feed wrote (layout 2, over a single-file feed's layout 1
// record it took over) is not read by the single-file feed the config
// returns to: the layout 1 slot B the glob's copy A left behind is older
// than the glob's copies, and reading it would skip or re-key lines by a
// stale mark (audit 10A, found on the exactlyOnce file record of the same
// design). The single-file book starts empty, and a later single-file
// open reads what it stores itself.
func TestWebhookSingleAfterGlobStartsWithoutRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hook.rec")
	single := func() *whBook {
		k, err := openBook(WebhookConfig{Record: path}, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	k := single()
	for _, pos := range []int64{16, 32} { // slot A, then slot B
		if err := k.markApplied(0xa1, pos); err != nil {
			t.Fatal(err)
		}
	}
	k.close()
	g := openBookAt(t, path, nil, false) // takes the layout 1 record over
	if got := g.entry(0xa1); got == nil || got.Applied != 32 {
		t.Fatalf("glob book took over %+v, want applied 32", got)
	}
	for _, f := range []func() error{
		func() error { return g.markApplied(0xa1, 48) }, // copy B
		func() error { return g.markApplied(0xb2, 8) },  // copy A, over slot A only
	} {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	g.close()

	k = single()
	if len(k.ent) != 0 {
		t.Errorf("single-file book after a glob's layout 2 record holds %s, want no record (a stale layout 1 slot read)", table(k))
	}
	if err := k.markApplied(0xc3, 8); err != nil {
		t.Fatal(err)
	}
	k.close()
	k = single()
	defer k.close()
	if e := k.entry(0xc3); e == nil || e.Applied != 8 || len(k.ent) != 1 {
		t.Errorf("single-file book reopened holds %s, want only c3 applied 8", table(k))
	}
}
