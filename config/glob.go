package config

import (
	"fmt"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// Glob feeds (DESIGN §10): a path holding '*', '?' or '[' is a glob;
// exclude, scanIntervalMillis, maxOpenFiles, closeInactiveMillis and
// forgetAfterMillis tune it.

// IsGlob reports whether a feed path is a glob.
func IsGlob(path string) bool { return strings.ContainsAny(path, "*?[") }

// globFeed decodes a feed's glob keys; pathLine is the path key's line.
func (d *decoder) globFeed(o *obj, f *Feed, pathLine int) {
	o.integer("scanIntervalMillis", &f.ScanIntervalMillis, 1, maxMillis)
	o.integer("maxOpenFiles", &f.MaxOpenFiles, 2, 1<<20)
	o.integer("closeInactiveMillis", &f.CloseInactiveMillis, 1, maxMillis)
	o.integer("forgetAfterMillis", &f.ForgetAfterMillis, 1, maxMillis)
	glob := IsGlob(f.Path)
	if glob {
		if err := checkGlob(f.Path); err != "" {
			d.errorf(pathLine, "%s: %s", o.at("path"), err)
		}
	}
	items, line, ok := o.list("exclude")
	if !ok || line == 0 {
		return
	}
	if !glob {
		d.errorf(line, "%s: exclude needs a glob path (one holding *, ? or [)", o.at("exclude"))
		return
	}
	for i, it := range items {
		it = resolve(it)
		at := fmt.Sprintf("%s[%d]", o.at("exclude"), i)
		if it.Kind != yaml.ScalarNode || it.Value == "" {
			d.errorf(it.Line, "%s: must be a non-empty string (a glob over whole paths), got %s", at, describe(it))
			continue
		}
		p := d.absPath(it.Value)
		if err := checkGlob(p); err != "" {
			d.errorf(it.Line, "%s: %s", at, err)
			continue
		}
		f.Exclude = append(f.Exclude, p)
	}
}

// checkGlob returns why p is not a valid glob ("" when it is).
func checkGlob(p string) string {
	for _, s := range strings.Split(p, "/") {
		if s == "**" {
			continue
		}
		if strings.Contains(s, "**") {
			return fmt.Sprintf("bad glob %q: ** must be a whole path segment", clip(p))
		}
		if _, err := filepath.Match(s, ""); err != nil {
			return fmt.Sprintf("bad glob %q: %v", clip(p), err)
		}
	}
	return ""
}
