package daemon

import (
	"context"
	"os"

	"github.com/hashicorp/go-hclog"

	"tailfeed/config"
	"tailfeed/internal/datadir"
	"tailfeed/source/file"
	"tailfeed/status"
)

// feedSource is what the daemon needs of a feed's source: a *file.Source
// (one file) or a *file.Glob (a glob path, DESIGN §10).
type feedSource interface {
	Run(ctx context.Context) error
	Drain(ctx context.Context)
	Close() error
	State() file.State
	Detail() string
	Epoch() uint64
	ReadPos() int64
	Downgraded() uint64
	Oversized() uint64
	Unterminated() int64
	LostTails() uint64
	LostBytes() uint64
	CommitFailures() uint64
	CommitOK() bool
	SyncedSeq() uint64
	LinesRead() uint64
	BytesRead() uint64
}

var (
	_ feedSource = (*file.Source)(nil)
	_ feedSource = (*file.Glob)(nil)
)

// buildGlob makes a glob feed's source: one stream per matched file, each
// with its pointer under dataDir/feeds/<feed>/ when COMMITTED.
func (d *Daemon) buildGlob(cfg *config.Config, f *Feed, fc *config.Feed, stream file.Config, log hclog.Logger) error {
	gc := file.GlobConfig{
		Stream:        stream,
		Exclude:       fc.Exclude,
		ScanInterval:  fc.Built.ScanInterval,
		MaxOpenFiles:  globDescriptors(fc.MaxOpenFiles),
		CloseInactive: fc.Built.CloseInactive,
		ForgetAfter:   fc.Built.ForgetAfter,
		Resumes:       d.resumes, // a feed restarted by a reload (reload.go)
	}
	if f.strat == file.Committed {
		gc.PointerDir = datadir.GlobPointers(cfg.DataDir, fc.Name)
		gc.EpochsPath = datadir.Epochs(cfg.DataDir, fc.Name)
	}
	g, err := file.NewGlob(gc, f.pub)
	if err != nil {
		return err
	}
	f.glob, f.src = g, g
	return nil
}

// ownDescriptors is the part of a glob feed's maxOpenFiles left to the
// process's own descriptors: the standard streams and the log, the status
// listener and its connections, dataDir/LOCK, the losses ledger, the
// inotify and epoll instances, the runtime's, a file sink's output, the
// pointer directory and epochs file while a new pointer is made durable —
// 14 to 18 for one glob feed with a file sink — so that an operator who
// counts every descriptor of the process (ls /proc/PID/fd), not only the
// inputs and pointers, finds it within maxOpenFiles too (with one feed).
const ownDescriptors = 24

// globDescriptors is the descriptor budget a glob feed's source gets for
// its inputs, their pointers and its short looks at files' first bytes:
// maxOpenFiles less ownDescriptors, at least 2 (one stream): below 29 a
// feed with pointers reads one file at a time.
func globDescriptors(maxOpenFiles int) int {
	return max(2, maxOpenFiles-ownDescriptors)
}

// globSnapshot fills a glob feed's part of a snapshot (c: its counts, from
// the pass that made the feed's state).
func (f *Feed) globSnapshot(s *status.FeedSnapshot, c file.GlobCounts, files bool) {
	g := f.glob
	s.Glob = &status.GlobSnapshot{Tracked: c.Tracked, Open: c.Open, Behind: c.Behind, Skipped: c.Skipped}
	if files {
		s.Glob.Files = []status.FileReport{}
		for _, fs := range g.Files() {
			s.Glob.Files = append(s.Glob.Files, status.FileReport(fs))
		}
	}
	if f.strat == file.Committed {
		s.Pointer = &status.PointerSnapshot{Commits: g.Commits(), CommitFailures: g.CommitFailures(),
			CommitOK: g.CommitOK(), SyncedSeq: g.SyncedSeq()}
	}
}

func noFSNotify() bool { return os.Getenv("TAILFEED_NO_FSNOTIFY") != "" }
