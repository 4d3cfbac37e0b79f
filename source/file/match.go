package file

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Glob patterns (DESIGN §10). A feed's path holding '*', '?' or '[' is a
// glob: its segments (split on '/') are filepath.Match patterns, and a
// segment that is exactly "**" matches any number of directories, zero
// included, as in doublestar. A small matcher of our own: the doublestar
// module would add a dependency for about sixty lines.

// IsGlob reports whether path is a glob (holds '*', '?' or '[').
func IsGlob(path string) bool { return strings.ContainsAny(path, "*?[") }

// Pattern is a compiled glob over absolute paths.
type Pattern struct {
	raw  string
	segs []string // split on '/'; segs[0] is "" for an absolute pattern
}

// CompilePattern checks pattern (absolute, cleaned) and compiles it.
func CompilePattern(pattern string) (*Pattern, error) {
	if !filepath.IsAbs(pattern) {
		return nil, fmt.Errorf("glob %q is not absolute", pattern)
	}
	clean := filepath.Clean(pattern)
	segs := strings.Split(clean, "/")
	for _, s := range segs {
		if s == "**" {
			continue
		}
		if strings.Contains(s, "**") {
			return nil, fmt.Errorf("glob %q: ** must be a whole path segment", pattern)
		}
		if _, err := filepath.Match(s, ""); err != nil {
			return nil, fmt.Errorf("glob %q: bad segment %q: %v", pattern, s, err)
		}
	}
	return &Pattern{raw: clean, segs: segs}, nil
}

// String is the pattern as given (cleaned).
func (p *Pattern) String() string { return p.raw }

// Match reports whether the absolute path name matches the whole pattern.
func (p *Pattern) Match(name string) bool {
	return matchSegs(p.segs, strings.Split(filepath.Clean(name), "/"))
}

// dirMatcher matches the entries of one directory without splitting each
// entry's path again (a rescan matches every file of the tree).
type dirMatcher struct {
	pat  []string
	segs []string // the directory's segments, then one for the entry
}

// inDir makes a matcher for the entries of the clean absolute dir.
func (p *Pattern) inDir(dir string) dirMatcher {
	d := strings.Split(dir, "/")
	if dir == "/" {
		d = []string{""}
	}
	return dirMatcher{pat: p.segs, segs: append(d, "")}
}

// match reports whether dir/name matches the pattern (as Match).
func (m dirMatcher) match(name string) bool {
	m.segs[len(m.segs)-1] = name
	return matchSegs(m.pat, m.segs)
}

// MayHoldMatches reports whether a file below the directory dir could
// match: dir's segments match a prefix of the pattern. Discovery descends
// (and watches) only such directories.
func (p *Pattern) MayHoldMatches(dir string) bool {
	d := strings.Split(filepath.Clean(dir), "/")
	if dir == "/" {
		d = []string{""}
	}
	return prefixMatch(p.segs, d)
}

// Root is the longest leading directory without a meta character: where
// discovery starts.
func (p *Pattern) Root() string {
	var lit []string
	for _, s := range p.segs[:len(p.segs)-1] {
		if IsGlob(s) {
			break
		}
		lit = append(lit, s)
	}
	r := strings.Join(lit, "/")
	if r == "" {
		return "/"
	}
	return r
}

func matchSegs(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			for i := 0; i <= len(name); i++ {
				if matchSegs(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := filepath.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}

// prefixMatch: can the directory segments dir be continued to a match?
func prefixMatch(pat, dir []string) bool {
	for len(dir) > 0 {
		if len(pat) == 0 {
			return false
		}
		if pat[0] == "**" {
			return true
		}
		if ok, _ := filepath.Match(pat[0], dir[0]); !ok {
			return false
		}
		pat, dir = pat[1:], dir[1:]
	}
	// The directory's files are at pat[0]: something must remain.
	return len(pat) > 0
}
