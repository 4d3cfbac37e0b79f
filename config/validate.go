package config

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"tailfeed/internal/datadir"
)

// validate checks what spans entries: unique names, references between
// feeds and processors, and output paths. It also fills the overrides in
// overload.subscribers from their feed.
func (d *decoder) validate(cfg *Config, m *meta) {
	feeds := d.uniqueFeeds(cfg, m)
	procs := d.uniqueProcessors(cfg, m)
	for i, p := range cfg.Processors {
		if p.Feed == "" || feeds[p.Feed] != nil {
			continue
		}
		d.errorf(m.procs[i].feedLine, "processors[%d].feed: no feed named %q%s", i, clip(p.Feed),
			suggest(p.Feed, sortedKeys(feeds)))
	}
	for i, f := range cfg.Feeds {
		d.subscribers(f, i, m.feeds[i], procs)
	}
	d.unread(cfg, feeds)
	d.stateNames(cfg, feeds, m)
	d.outputPaths(cfg, m)
	for _, name := range SinkTypes() {
		if spec, _ := sinkSpec(name); spec.Check != nil {
			spec.Check(cfg, d.errorf)
		}
	}
}

// unread reports a feed that no processor reads (DESIGN §12 "Validation"):
// its pointer would move past every line and the lines would go nowhere.
// The error is at the feed's entry.
//
// A processor without a feed, or naming no feed, has its own error and may
// be the one meant for this feed: then the check stays silent, so one typo
// gives one error.
func (d *decoder) unread(cfg *Config, feeds map[string]*Feed) {
	read := map[string]bool{}
	for _, p := range cfg.Processors {
		if p.Feed == "" || feeds[p.Feed] == nil {
			return
		}
		read[p.Feed] = true
	}
	for i, f := range cfg.Feeds {
		if f.Name == "" || read[f.Name] {
			continue
		}
		d.errorf(f.Line, "feeds[%d]: no processor reads feed %q; its lines would go nowhere (add a processor with feed: %s)",
			i, clip(f.Name), clip(f.Name))
	}
}

// stateNames reports a glob feed whose pointers' directory under
// dataDir/feeds (DESIGN §10: feeds/<feed>/) is another feed's file there:
// a single-file feed's pointer (§3: feeds/<feed>.ptr), any feed's epochs
// file (feeds/<feed>.epochs), or where a reload moves them aside when a
// feed's path changes (feeds/<feed>.ptr.<epoch>.old,
// feeds/<feed>.epochs.<epoch>.old; refused whatever the feed). Feeds "x"
// and "x.ptr" would share dataDir/feeds/x.ptr. Only a COMMITTED feed keeps
// these files. The error is at the glob feed's name.
func (d *decoder) stateNames(cfg *Config, feeds map[string]*Feed, m *meta) {
	committed := func(f *Feed) bool { return f.ReadStrategy == StrategyCommitted } // only it keeps pointers
	for i, f := range cfg.Feeds {
		if f.Name == "" || !IsGlob(f.Path) || feeds[f.Name] != f || !committed(f) {
			continue
		}
		if movedAsideName.MatchString(f.Name) {
			d.errorf(m.feeds[i].nameLine, "feeds[%d].name: a glob feed named %q keeps its pointers in dataDir/feeds/%s/, where a reload moves a feed's pointer or epochs file aside (rename the feed)",
				i, clip(f.Name), clip(f.Name))
			continue
		}
		for _, file := range []struct{ suffix, what string }{{".ptr", "pointer"}, {".epochs", "epochs"}} {
			stem, ok := strings.CutSuffix(f.Name, file.suffix)
			if !ok || feeds[stem] == nil || !committed(feeds[stem]) || (file.suffix == ".ptr" && IsGlob(feeds[stem].Path)) {
				continue // a glob feed has no feeds/<feed>.ptr
			}
			d.errorf(m.feeds[i].nameLine, "feeds[%d].name: a glob feed named %q keeps its pointers in dataDir/feeds/%s/, which is feed %q's %s file (rename one of the two feeds)",
				i, clip(f.Name), clip(f.Name), clip(stem), file.what)
		}
	}
}

// movedAsideName is the name of a pointer or epochs file a reload moved
// aside (datadir.PointerAside: <feed>.ptr.<epoch>.old).
var movedAsideName = regexp.MustCompile(`\.(ptr|epochs)\.[0-9a-f]+\.old$`)

// uniqueFeeds reports a feed name used twice and indexes the feeds by name
// (the first of each name).
func (d *decoder) uniqueFeeds(cfg *Config, m *meta) map[string]*Feed {
	return uniqueNames(d, cfg.Feeds, "feeds", "feed",
		func(f *Feed) string { return f.Name }, func(i int) int { return m.feeds[i].nameLine })
}

// uniqueProcessors reports a processor name used twice (across all feeds:
// the name is the subscriber's name in the HTTP API and its dead-letter file)
// and indexes the processors by name.
func (d *decoder) uniqueProcessors(cfg *Config, m *meta) map[string]*Processor {
	return uniqueNames(d, cfg.Processors, "processors", "processor",
		func(p *Processor) string { return p.Name }, func(i int) int { return m.procs[i].nameLine })
}

// uniqueNames reports every entry of list whose name an earlier entry
// already has, at the line of its name, and indexes the first of each name.
func uniqueNames[T any](d *decoder, items []T, list, kind string, name func(T) string, line func(int) int) map[string]T {
	byName := map[string]T{}
	first := map[string]int{}
	for i, it := range items {
		n := name(it)
		if n == "" {
			continue
		}
		if j, dup := first[n]; dup {
			d.errorf(line(i), "%s[%d].name: duplicate %s name %q (also %s[%d], line %d)",
				list, i, kind, clip(n), list, j, line(j))
			continue
		}
		first[n] = i
		byName[n] = it
	}
	return byName
}

// subscribers checks that each overload.subscribers key names a processor of
// feed f, and fills what the entry leaves out from the feed's overload.
func (d *decoder) subscribers(f *Feed, i int, fm feedMeta, procs map[string]*Processor) {
	for _, name := range sortedKeys(f.Overload.Subscribers) {
		so, sm := f.Overload.Subscribers[name], fm.subs[name]
		if p := procs[name]; p == nil {
			var names []string
			for n, p := range procs {
				if p.Feed == f.Name {
					names = append(names, n)
				}
			}
			sort.Strings(names)
			d.errorf(sm.line, "feeds[%d].overload.subscribers: %q names no processor%s", i, clip(name), suggest(name, names))
		} else if p.Feed != f.Name {
			d.errorf(sm.line, "feeds[%d].overload.subscribers: %q is a processor of feed %q, not of %q",
				i, clip(name), clip(p.Feed), clip(f.Name))
		}
		if so.Policy == "" {
			so.Policy = f.Overload.Policy
		}
		if !sm.spinSet {
			so.SpinBoundMillis = f.Overload.SpinBoundMillis
		}
		if !sm.blocSet {
			so.BlockDeadlineMillis = f.Overload.BlockDeadlineMillis
		}
		f.Overload.Subscribers[name] = so
	}
}

// outputPaths reports two file sinks writing one path, and a file sink
// writing a feed's input. Paths are compared cleaned and absolute, without
// touching the file system (symlinks are not followed).
func (d *decoder) outputPaths(cfg *Config, m *meta) {
	inputs := map[string]string{}
	for _, f := range cfg.Feeds {
		if f.Path != "" && inputs[f.Path] == "" {
			inputs[f.Path] = describeFeed(f)
		}
	}
	outputs := map[string]int{}
	for i, p := range cfg.Processors {
		if p.OutputPath() == "" {
			continue
		}
		line := m.procs[i].pathLine
		if inState(cfg.DataDir, p.Path) {
			d.errorf(line, "processors[%d].path: %s is tailfeed's own state under dataDir %s", i, p.Path, cfg.DataDir)
		}
		if feed := inputs[p.Path]; feed != "" {
			d.errorf(line, "processors[%d].path: %s is the input of %s; a file sink cannot write the file it reads",
				i, p.Path, feed)
		}
		if j, dup := outputs[p.Path]; dup {
			d.errorf(line, "processors[%d].path: %s is already written by %s processor %s (line %d); two file sinks cannot share a path",
				i, p.Path, cfg.Processors[j].Type, describeProc(cfg.Processors[j], j), m.procs[j].pathLine)
			continue
		}
		outputs[p.Path] = i
	}
}

// inState reports whether path is dataDir itself or one of the files and
// folders tailfeed keeps there (LOCK, losses.jsonl, feeds/, dlq/, state/).
func inState(dataDir, path string) bool { return datadir.Owns(dataDir, path) }

func describeFeed(f *Feed) string {
	if f.Name == "" {
		return "a feed"
	}
	return fmt.Sprintf("feed %q", clip(f.Name))
}

func describeProc(p *Processor, i int) string {
	if p.Name == "" {
		return fmt.Sprintf("processors[%d]", i)
	}
	return fmt.Sprintf("%q", clip(p.Name))
}
