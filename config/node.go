package config

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Bounds on the work one document can cause. Aliases let a small file name
// one mapping many times; these keep a hostile or broken file from exhausting
// memory or time.
const (
	maxErrors = 1000    // errors reported; then one "too many errors"
	maxVisits = 250_000 // mapping pairs walked, counting each alias use
)

// decoder walks a yaml.Node tree against the schema and collects errors.
type decoder struct {
	name    string // the file as named in errors
	abs     string // absolute path of the file; "" when unnamed
	dir     string // base for relative paths
	errs    Errors
	dropped int  // errors beyond maxErrors, not kept
	visits  int  // mapping pairs walked so far
	over    bool // maxVisits reached: stop walking

	raw     map[*yaml.Node]string // scalars as written, before ${VAR} expansion (env.go)
	written map[string]string     // the same by key ("status.token"), for those read

	envFailed map[*yaml.Node]bool // scalars whose ${VAR} could not be expanded (reported)
}

func newDecoder(file string) *decoder {
	d := &decoder{name: file}
	if file == "" {
		d.name = "<config>"
	} else {
		if abs, err := filepath.Abs(file); err == nil {
			d.abs = abs
			d.dir = filepath.Dir(abs)
		}
	}
	if d.dir == "" {
		if wd, err := filepath.Abs("."); err == nil {
			d.dir = wd
		} else {
			d.errorf(0, "cannot resolve the working directory: %v", err)
		}
	}
	return d
}

func (d *decoder) errorf(line int, format string, args ...any) {
	if d.full() {
		d.dropped++
		return
	}
	d.errs = append(d.errs, &Error{File: d.name, Line: line, Msg: fmt.Sprintf(format, args...)})
}

// full reports whether no more errors are kept.
func (d *decoder) full() bool { return len(d.errs) >= maxErrors }

// result returns the errors sorted by line, with a last note when some were
// dropped.
func (d *decoder) result() Errors {
	errs := d.errs.finish()
	if d.dropped > 0 && len(errs) > 0 {
		errs = append(errs, &Error{File: d.name, Line: errs[len(errs)-1].Line,
			Msg: fmt.Sprintf("too many errors; %d more not shown", d.dropped)})
	}
	return errs
}

// absPath resolves p against the config file's directory and cleans it.
func (d *decoder) absPath(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(d.dir, p)
}

// resolve follows aliases; nil when n is nil or an alias leads nowhere.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i == 64 {
			return nil
		}
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or a YAML null (~, null, nothing): the
// schema treats such a value as if its key were not there.
func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// describe names a node's type and value for "got …" in messages.
func describe(n *yaml.Node) string {
	n = resolve(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch tag := n.ShortTag(); tag {
		case "!!null":
			return "null"
		case "!!str":
			return "string " + strconv.Quote(clip(n.Value))
		case "!!int", "!!float":
			return "number " + clip(n.Value)
		case "!!bool":
			return "boolean " + clip(n.Value)
		default:
			return tag + " " + strconv.Quote(clip(n.Value))
		}
	}
	return "an unknown YAML node"
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// entry is one key and its value in a mapping.
type entry struct {
	key, val *yaml.Node
}

// obj is a YAML mapping decoded against a fixed set of keys.
type obj struct {
	d    *decoder
	path string // "feeds[0]"; "" at top level
	line int
	m    map[string]entry
}

// object checks that n is a mapping of known keys (any key when known is nil)
// and indexes it. It reports unknown and duplicate keys. Merge keys (<<) are
// expanded, explicit keys winning. It returns nil (after reporting) when n is
// not a mapping, and after the alias-expansion bound was hit.
func (d *decoder) object(n *yaml.Node, path string, line int, known []string) *obj {
	r := resolve(n)
	if d.over {
		return nil
	}
	if r == nil || r.Kind != yaml.MappingNode {
		where := path
		if where == "" {
			where = "the config"
		}
		d.errorf(line, "%s: must be a mapping, got %s", where, describe(n))
		return nil
	}
	o := &obj{d: d, path: path, line: line, m: map[string]entry{}}
	d.collect(o, r, true, map[*yaml.Node]bool{})
	for _, k := range sortedKeys(o.m) {
		if known != nil && !contains(known, k) && !d.full() {
			e := o.m[k]
			d.errorf(e.key.Line, "unknown key %q %s%s", k, o.where(), suggest(k, known))
		}
	}
	return o
}

// collect adds the pairs of mapping n to o. Merged mappings never override
// keys already present; each node is visited once, so aliases cannot loop.
func (d *decoder) collect(o *obj, n *yaml.Node, explicit bool, seen map[*yaml.Node]bool) {
	if seen[n] || d.over {
		return
	}
	seen[n] = true
	if d.visits += len(n.Content) / 2; d.visits > maxVisits {
		d.over = true
		d.errs = append(d.errs, &Error{File: d.name, Line: n.Line, // kept even when full
			Msg: fmt.Sprintf("the document is too large once its aliases are expanded (over %d keys)", maxVisits)})
		return
	}
	var merges []*yaml.Node
	local := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			d.errorf(n.Content[i].Line, "%s: a key must be a plain string, got %s", o.name(), describe(n.Content[i]))
			continue
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if first, dup := local[k.Value]; dup {
			if explicit {
				d.errorf(k.Line, "duplicate key %q %s (first at line %d)", k.Value, o.where(), first)
			}
			continue
		}
		local[k.Value] = k.Line
		if _, ok := o.m[k.Value]; !ok {
			o.m[k.Value] = entry{key: k, val: v}
		}
	}
	for _, m := range merges {
		d.merge(o, m, seen)
	}
}

func (d *decoder) merge(o *obj, m *yaml.Node, seen map[*yaml.Node]bool) {
	r := resolve(m)
	switch {
	case r != nil && r.Kind == yaml.MappingNode:
		d.collect(o, r, false, seen)
		return
	case r != nil && r.Kind == yaml.SequenceNode:
		ok := true
		for _, item := range r.Content {
			if ir := resolve(item); ir != nil && ir.Kind == yaml.MappingNode {
				d.collect(o, ir, false, seen)
			} else {
				ok = false
			}
		}
		if ok {
			return
		}
	}
	d.errorf(m.Line, "%s: a merge (<<) needs a mapping or a list of mappings, got %s", o.name(), describe(m))
}

func (o *obj) where() string {
	if o.path == "" {
		return "at top level"
	}
	return "in " + o.path
}

func (o *obj) name() string {
	if o.path == "" {
		return "top level"
	}
	return o.path
}

// at names key in messages: "feeds[0].queueCapacity".
func (o *obj) at(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

// get returns the value of key and the key's line; ok is false when the key
// is absent or null.
func (o *obj) get(key string) (n *yaml.Node, line int, ok bool) {
	e, found := o.m[key]
	if !found || isNull(e.val) {
		return nil, 0, false
	}
	n = resolve(e.val)
	if o.d.envFailed[n] {
		return nil, e.key.Line, false // reported at its line; nothing else to say about it
	}
	if r, ok := o.d.raw[n]; ok {
		if o.d.written == nil {
			o.d.written = map[string]string{}
		}
		o.d.written[o.at(key)] = r
	}
	return n, e.key.Line, true
}

// str sets *dst from any scalar (numbers and booleans are taken as written).
func (o *obj) str(key string, dst *string) (line int, ok bool) {
	n, line, ok := o.get(key)
	if !ok {
		return line, false // line: 0 when absent; a failed ${VAR} was reported
	}
	if n.Kind != yaml.ScalarNode {
		o.d.errorf(line, "%s: must be a string, got %s", o.at(key), describe(n))
		return line, false
	}
	*dst = n.Value
	return line, true
}

// nonEmpty is str for keys where "" is not a value.
func (o *obj) nonEmpty(key string, dst *string) (line int, ok bool) {
	var s string
	if line, ok = o.str(key, &s); !ok {
		return line, false
	}
	if s == "" {
		o.d.errorf(line, "%s: must not be empty", o.at(key))
		return line, false
	}
	*dst = s
	return line, true
}

// filePath sets *dst to the absolute form of a non-empty path.
func (o *obj) filePath(key string, dst *string) (line int, ok bool) {
	var s string
	if line, ok = o.nonEmpty(key, &s); !ok {
		return line, false
	}
	if strings.IndexByte(s, 0) >= 0 {
		o.d.errorf(line, "%s: a path must not contain a NUL byte", o.at(key))
		return line, false
	}
	*dst = o.d.absPath(s)
	return line, true
}

// integer sets *dst from a YAML integer within [min, max].
func (o *obj) integer(key string, dst *int, min, max int) (line int, ok bool) {
	n, line, ok := o.get(key)
	if !ok {
		return line, false // line: 0 when absent; a failed ${VAR} was reported
	}
	v, ok, why := parseInt(n)
	if !ok {
		o.d.errorf(line, "%s: must be an integer, got %s%s", o.at(key), describe(n), why)
		return line, false
	}
	switch {
	case v < int64(min) && min == 1:
		o.d.errorf(line, "%s: must be positive, got %d", o.at(key), v)
	case v < int64(min):
		o.d.errorf(line, "%s: must be at least %d, got %d", o.at(key), min, v)
	case v > int64(max):
		o.d.errorf(line, "%s: must be at most %d, got %d", o.at(key), max, v)
	default:
		*dst = int(v)
		return line, true
	}
	return line, false
}

// parseInt reads an !!int scalar the way YAML resolved it (signs, 0x, 0o, 0b,
// underscores). Floats and quoted numbers are not integers. why explains a
// failure beyond the type, or is "".
func parseInt(n *yaml.Node) (v int64, ok bool, why string) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" && bigInt.MatchString(n.Value) {
			return 0, false, " (out of range)"
		}
		return 0, false, ""
	}
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, false, " (out of range)"
		}
		return 0, false, ""
	}
	if v > math.MaxInt || v < math.MinInt {
		return 0, false, " (out of range)"
	}
	return v, true, ""
}

// bigInt matches an integer that YAML resolved as a float because it overflows.
var bigInt = regexp.MustCompile(`^[-+]?[0-9_]+$`)

// boolean sets *dst from true or false.
func (o *obj) boolean(key string, dst *bool) (line int, ok bool) {
	n, line, ok := o.get(key)
	if !ok {
		return line, false // line: 0 when absent; a failed ${VAR} was reported
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		switch strings.ToLower(n.Value) {
		case "true":
			*dst = true
			return line, true
		case "false":
			*dst = false
			return line, true
		}
	}
	o.d.errorf(line, "%s: must be true or false, got %s", o.at(key), describe(n))
	return line, false
}

// number sets *dst from a YAML integer or float within [min, max].
func (o *obj) number(key string, dst *float64, min, max float64) (line int, ok bool) {
	n, line, ok := o.get(key)
	if !ok {
		return line, false // line: 0 when absent; a failed ${VAR} was reported
	}
	var v float64
	var err error = strconv.ErrSyntax
	if tag := n.ShortTag(); n.Kind == yaml.ScalarNode && (tag == "!!int" || tag == "!!float") {
		if tag == "!!int" {
			var i int64
			if i, err = strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
				v = float64(i)
			}
		} else {
			v, err = parseFloat(n.Value)
		}
	}
	if err != nil {
		o.d.errorf(line, "%s: must be a number, got %s", o.at(key), describe(n))
		return line, false
	}
	if !(v >= min && v <= max) {
		o.d.errorf(line, "%s: must be between %g and %g, got %s", o.at(key), min, max, n.Value)
		return line, false
	}
	*dst = v
	return line, true
}

// parseFloat reads a YAML float, including .inf and .nan.
func parseFloat(s string) (float64, error) {
	switch strings.ToLower(s) {
	case ".inf", "+.inf":
		return math.Inf(1), nil
	case "-.inf":
		return math.Inf(-1), nil
	case ".nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
}

// enum sets *dst from one of values (case-sensitive); aliases map accepted
// spellings to a value.
func (o *obj) enum(key string, dst *string, values []string, aliases map[string]string) (line int, ok bool) {
	var s string
	if line, ok = o.str(key, &s); !ok {
		return line, false
	}
	if v, ok := aliases[s]; ok {
		s = v
	}
	if !contains(values, s) {
		o.d.errorf(line, "%s: unknown value %q; want one of %s%s", o.at(key), clip(s),
			strings.Join(values, ", "), suggest(s, values))
		return line, false
	}
	*dst = s
	return line, true
}

// sub returns the nested mapping at key, or nil when it is absent, null or
// not a mapping (reported).
func (o *obj) sub(key string, known []string) *obj {
	n, line, ok := o.get(key)
	if !ok {
		return nil
	}
	return o.d.object(n, o.at(key), line, known)
}

// list returns the items of the sequence at key and the key's line (0 and
// no items when absent or null). ok is false when the value is not a list
// (reported).
func (o *obj) list(key string) (items []*yaml.Node, line int, ok bool) {
	n, line, present := o.get(key)
	if !present {
		return nil, 0, true
	}
	if n.Kind != yaml.SequenceNode {
		o.d.errorf(line, "%s: must be a list, got %s", o.at(key), describe(n))
		return nil, line, false
	}
	return n.Content, line, true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// suggest returns ` (did you mean "x"?)` for the closest candidate, if any is
// close: same letters ignoring case, or at most two edits away.
func suggest(s string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if strings.EqualFold(s, c) {
			return fmt.Sprintf(" (did you mean %q?)", c)
		}
		if d := editDistance(strings.ToLower(s), strings.ToLower(c), bestDist); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" || bestDist >= len(s) {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance of a and b, or limit when it is at
// least limit (or the strings are long).
func editDistance(a, b string, limit int) int {
	if len(a) > 64 || len(b) > 64 {
		return limit
	}
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}
