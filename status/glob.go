package status

import (
	"encoding/json"

	"github.com/prometheus/client_golang/prometheus"
)

// Glob feeds (DESIGN §10 "Status"): a glob feed's epoch, pointer.offset and
// pointer.epoch are null (commits and commitFailures are summed over its
// files); it adds filesTracked, filesOpen, filesBehind, filesSkipped, and
// with GET /feed.status?files=1 the list of its files.

// GlobSnapshot is a glob feed's file counts (FeedSnapshot.Glob).
type GlobSnapshot struct {
	Tracked, Open, Behind int
	Skipped               uint64
	Files                 []FileReport // nil unless asked for (?files=1)
}

// FileReport is one tracked file of a glob feed.
type FileReport struct {
	Path    string  `json:"path"`
	FileKey string  `json:"fileKey"`
	Epoch   *string `json:"epoch"` // null until its stream has one
	Offset  int64   `json:"offset"`
	Size    int64   `json:"size"`
	State   string  `json:"state"` // BEHIND, CAUGHT_UP, CLOSED or GONE
}

// MarshalJSON writes a glob feed's report with its null and added fields;
// any other feed's as it is.
func (fr FeedReport) MarshalJSON() ([]byte, error) {
	type plain FeedReport
	if fr.Glob == nil {
		return json.Marshal(plain(fr))
	}
	type globPointer struct {
		Offset         *int64  `json:"offset"`
		Epoch          *string `json:"epoch"`
		Commits        uint64  `json:"commits"`
		CommitFailures uint64  `json:"commitFailures"`
	}
	out := struct {
		plain
		Epoch        *string       `json:"epoch"`
		Pointer      *globPointer  `json:"pointer"`
		FilesTracked int           `json:"filesTracked"`
		FilesOpen    int           `json:"filesOpen"`
		FilesBehind  int           `json:"filesBehind"`
		FilesSkipped uint64        `json:"filesSkipped"`
		Files        *[]FileReport `json:"files,omitempty"` // [] when asked for and nothing matches
	}{plain: plain(fr), FilesTracked: fr.Glob.Tracked, FilesOpen: fr.Glob.Open, FilesBehind: fr.Glob.Behind,
		FilesSkipped: fr.Glob.Skipped}
	if fr.Glob.Files != nil {
		out.Files = &fr.Glob.Files
	}
	if p := fr.Pointer; p != nil {
		out.Pointer = &globPointer{Commits: p.Commits, CommitFailures: p.CommitFailures}
	}
	return json.Marshal(out)
}

var (
	mFilesTracked = desc("feed_files_tracked", "Files a glob feed tracks.", feedLabels)
	mFilesOpen    = desc("feed_files_open", "Files of a glob feed open now (one input and one pointer descriptor each).", feedLabels)
	mFilesBehind  = desc("feed_files_behind", "Files of a glob feed with unread bytes.", feedLabels)
	mFilesSkipped = desc("feed_files_skipped_total", "Glob matches skipped as not regular files.", feedLabels)
)

func init() { allDescs = append(allDescs, mFilesTracked, mFilesOpen, mFilesBehind, mFilesSkipped) }

func collectGlob(ch chan<- prometheus.Metric, name string, g *GlobSnapshot) {
	if g == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(mFilesTracked, prometheus.GaugeValue, float64(g.Tracked), name)
	ch <- prometheus.MustNewConstMetric(mFilesOpen, prometheus.GaugeValue, float64(g.Open), name)
	ch <- prometheus.MustNewConstMetric(mFilesBehind, prometheus.GaugeValue, float64(g.Behind), name)
	ch <- prometheus.MustNewConstMetric(mFilesSkipped, prometheus.CounterValue, float64(g.Skipped), name)
}
