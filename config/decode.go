package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"tailfeed/internal/redact"
)

// Limits beyond "positive". They keep values inside what the other packages
// can hold (a millisecond count must fit a time.Duration) and allocate.
const (
	maxMillis      = 365 * 24 * 3600 * 1000 // one year
	maxCount       = 1 << 24                // lines, attempts, in-flight deliveries
	maxBytes       = 1 << 30                // 1 GiB
	maxName        = 200                    // bytes; names become file names (feeds/<feed>.ptr, dlq/<processor>.jsonl)
	maxConnections = 1 << 20                // status.maxConnections: each holds a descriptor
)

// The keys of each section. Anything else is an error.
var (
	topKeys       = []string{"instance", "dataDir", "status", "log", "shutdownTimeoutMillis", "feeds", "processors"}
	statusKeys    = []string{"listen", "token", "protectRead", "stallAlertMillis", "maxConnections", "tls"}
	serverTLSKeys = []string{"certFile", "keyFile", "clientCAFile"}
	clientTLSKeys = []string{"caFile", "certFile", "keyFile", "insecureSkipVerify"}
	logKeys       = []string{"level", "format"}
	feedKeys      = []string{"name", "path", "readStrategy", "maxLineBytes", "queueCapacity", "queueBytes", "maxPendingAcks", "pollIntervalMillis", "rotateWaitMillis", "commitSyncMillis", "rotatedNames", "overload", "exclude", "scanIntervalMillis", "maxOpenFiles", "closeInactiveMillis", "forgetAfterMillis"}
	overloadKeys  = []string{"policy", "spinBoundMillis", "blockDeadlineMillis", "subscribers"}
	subscriberKey = []string{"policy", "spinBoundMillis", "blockDeadlineMillis"}
	// commonProcessorKeys are the keys of every processor entry (see the
	// package doc, "Common keys"); each sink type adds its own (SinkSpec.Keys).
	commonProcessorKeys = []string{"name", "feed", "type", "match", "exclude", "path", "exactlyOnce", "fsync", "fsyncIntervalMillis", "mode", "onFailure", "retry", "ackTimeoutMillis", "maxInFlight", "url", "timeoutMillis", "batchMaxLines", "batchMaxBytes", "headers", "raw", "format", "tls"}
	retryKeys           = []string{"initialMillis", "maxMillis", "jitter", "attempts"}
)

// The values of each enum.
var (
	strategies      = []string{StrategyCommitted, StrategyEarliest, StrategyLatest, StrategyOnceEarliest, StrategyOnceLatest}
	strategyAliases = map[string]string{"COMMITED": StrategyCommitted}
	policies        = []string{PolicyPause, PolicyDropAfterSpin, PolicyBlockWithDeadline}
	fsyncs          = []string{FsyncAlways, FsyncInterval, FsyncNever}
	onFailures      = []string{OnFailureHold, OnFailureDeadLetter}
	levels          = []string{"trace", "debug", "info", "warn", "error"}
	formats         = []string{"text", "json"}
	outFormats      = []string{FormatRaw, FormatJSON}
)

var validName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// meta is what validation needs beyond the Config: where each value was.
type meta struct {
	feeds []feedMeta
	procs []procMeta
}

type feedMeta struct {
	nameLine, pathLine int
	subs               map[string]subMeta // overload.subscribers entries
}

type subMeta struct {
	line             int
	spinSet, blocSet bool
}

type procMeta struct {
	nameLine, feedLine, pathLine int
}

// parse decodes data, fills defaults, validates, and returns the config (nil
// when the document could not be read at all).
func (d *decoder) parse(data []byte) *Config {
	top := d.document(data)
	if top == nil {
		return nil
	}
	d.expandEnv(top, map[*yaml.Node]bool{})
	o := d.object(top, "", top.Line, topKeys)
	if o == nil {
		return nil
	}
	cfg := DefaultConfig()
	cfg.File, cfg.Name = d.abs, d.name
	d.global(o, cfg)
	m := d.entries(o, cfg)
	d.validate(cfg, m)
	cfg.raw = d.written
	return cfg
}

// global decodes the top-level keys other than the lists.
func (d *decoder) global(o *obj, cfg *Config) {
	cfg.DataDir = d.absPath(cfg.DataDir)
	if line, ok := o.filePath("dataDir", &cfg.DataDir); ok {
		cfg.DataDirLine = line
	}
	d.status(o.sub("status", statusKeys), &cfg.Status)
	if l := o.sub("log", logKeys); l != nil {
		l.enum("level", &cfg.Log.Level, levels, nil)
		l.enum("format", &cfg.Log.Format, formats, nil)
	}
	o.integer("shutdownTimeoutMillis", &cfg.ShutdownTimeoutMillis, 1, maxMillis)
	if line, ok := o.str("instance", &cfg.Instance); ok && (!validName.MatchString(cfg.Instance) || len(cfg.Instance) > maxName) {
		d.errorf(line, "instance: %q must be 1 to %d of [A-Za-z0-9._-] (it names this sidecar in every engine-side identity)", cfg.Instance, maxName)
	}
}

// entries decodes the feeds and processors lists.
func (d *decoder) entries(o *obj, cfg *Config) *meta {
	var m meta
	items, line, ok := o.list("feeds")
	if ok && len(items) == 0 {
		d.errorf(line, "no feeds: the config must define at least one entry under feeds")
	}
	for i, item := range items {
		f, fm := d.feed(item, fmt.Sprintf("feeds[%d]", i))
		cfg.Feeds = append(cfg.Feeds, f)
		m.feeds = append(m.feeds, fm)
	}
	items, _, _ = o.list("processors")
	for i, item := range items {
		p, pm := d.processor(item, fmt.Sprintf("processors[%d]", i))
		cfg.Processors = append(cfg.Processors, p)
		m.procs = append(m.procs, pm)
	}
	return &m
}

func (d *decoder) status(o *obj, s *Status) {
	if o == nil {
		return
	}
	if line, ok := o.nonEmpty("listen", &s.Listen); ok {
		if err := checkListen(s.Listen); err != "" {
			d.errorf(line, "status.listen: %q %s", clip(s.Listen), err)
		}
	}
	o.str("token", &s.Token)
	o.boolean("protectRead", &s.ProtectRead)
	o.integer("stallAlertMillis", &s.StallAlertMillis, 1, maxMillis)
	o.integer("maxConnections", &s.MaxConnections, 1, maxConnections)
	d.serverTLS(o, &s.TLS)
}

// serverTLS reads status.tls: certFile and keyFile together, clientCAFile
// only with them.
func (d *decoder) serverTLS(o *obj, t *ServerTLS) {
	s := o.sub("tls", serverTLSKeys)
	if s == nil {
		return
	}
	_, t.Line, _ = o.get("tls")
	c, _ := s.filePath("certFile", &t.CertFile)
	k, _ := s.filePath("keyFile", &t.KeyFile)
	s.filePath("clientCAFile", &t.ClientCAFile)
	if c == 0 || k == 0 {
		d.errorf(t.Line, "%s: HTTPS needs both certFile and keyFile (PEM files)", o.at("tls"))
	}
}

// clientTLS reads a processor's tls: certFile and keyFile together.
func (d *decoder) clientTLS(o *obj, t *ClientTLS) {
	s := o.sub("tls", clientTLSKeys)
	if s == nil {
		return
	}
	_, t.Line, _ = o.get("tls")
	s.filePath("caFile", &t.CAFile)
	c, _ := s.filePath("certFile", &t.CertFile)
	k, _ := s.filePath("keyFile", &t.KeyFile)
	s.boolean("insecureSkipVerify", &t.InsecureSkipVerify)
	if (c == 0) != (k == 0) {
		d.errorf(t.Line, "%s: a client certificate needs both certFile and keyFile", o.at("tls"))
	}
}

// checkListen returns "" for a host:port with a numeric port, else what is wrong.
func checkListen(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "is not host:port (" + strings.TrimPrefix(err.Error(), "address "+addr+": ") + ")"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "has no port number 0-65535"
	}
	return ""
}

func (d *decoder) feed(n *yaml.Node, path string) (*Feed, feedMeta) {
	f := DefaultFeed()
	f.Line = n.Line
	var m feedMeta
	o := d.object(n, path, n.Line, feedKeys)
	if o == nil {
		return &f, m
	}
	m.nameLine = d.entryName(o, "name", &f.Name)
	if line, ok := o.filePath("path", &f.Path); ok {
		m.pathLine, f.PathLine = line, line
	} else if line == 0 {
		d.errorf(f.Line, "%s: missing path (the file to tail)", path)
	}
	o.enum("readStrategy", &f.ReadStrategy, strategies, strategyAliases)
	o.integer("maxLineBytes", &f.MaxLineBytes, 1, maxBytes)
	o.integer("queueCapacity", &f.QueueCapacity, 1, maxCount)
	o.integer("queueBytes", &f.QueueBytes, 1, maxBytes)
	o.integer("maxPendingAcks", &f.MaxPendingAcks, 1, maxCount)
	o.integer("pollIntervalMillis", &f.PollIntervalMillis, 1, maxMillis)
	o.integer("rotateWaitMillis", &f.RotateWaitMillis, 0, maxMillis)
	o.integer("commitSyncMillis", &f.CommitSyncMillis, 1, maxMillis)
	d.rotatedNames(o, &f.RotatedNames)
	d.globFeed(o, &f, m.pathLine)
	m.subs = d.overload(o.sub("overload", overloadKeys), &f.Overload)
	return &f, m
}

// rotatedNames reads the optional list of globs a rotated generation's base
// name must match (DESIGN §4). Each is a filepath.Match pattern over a base
// name: it may not be empty nor hold a '/', and it must be well formed.
func (d *decoder) rotatedNames(o *obj, dst *[]string) {
	items, line, ok := o.list("rotatedNames")
	if !ok || line == 0 {
		return
	}
	if len(items) == 0 {
		d.errorf(line, "%s: must not be an empty list (leave it out for the default)", o.at("rotatedNames"))
		return
	}
	for i, it := range items {
		it = resolve(it)
		at := fmt.Sprintf("%s[%d]", o.at("rotatedNames"), i)
		switch {
		case it.Kind != yaml.ScalarNode:
			d.errorf(it.Line, "%s: must be a string (a glob over base names), got %s", at, describe(it))
		case it.Value == "":
			d.errorf(it.Line, "%s: must not be empty", at)
		case strings.ContainsRune(it.Value, '/'):
			d.errorf(it.Line, "%s: %q holds a '/'; the globs match base names only", at, clip(it.Value))
		default:
			if _, err := filepath.Match(it.Value, ""); err != nil {
				d.errorf(it.Line, "%s: bad glob %q: %v", at, clip(it.Value), err)
				continue
			}
			*dst = append(*dst, it.Value)
		}
	}
}

// entryName reads a required name key and checks its spelling; it returns the
// key's line (the entry's line when the name is missing).
func (d *decoder) entryName(o *obj, key string, dst *string) int {
	line, ok := o.nonEmpty(key, dst)
	switch {
	case line == 0:
		d.errorf(o.line, "%s: missing %s", o.path, key)
		return o.line
	case !ok:
	case !validName.MatchString(*dst):
		d.errorf(line, "%s: %q is not a valid name (use only letters, digits, '.', '_' and '-')", o.at(key), clip(*dst))
	case *dst == "." || *dst == "..":
		d.errorf(line, "%s: %q is not a valid name (it is used as a file name)", o.at(key), *dst)
	case len(*dst) > maxName:
		d.errorf(line, "%s: name is %d bytes long; at most %d", o.at(key), len(*dst), maxName)
	}
	return line
}

func (d *decoder) overload(o *obj, ov *Overload) map[string]subMeta {
	if o == nil {
		return nil
	}
	o.enum("policy", &ov.Policy, policies, nil)
	o.integer("spinBoundMillis", &ov.SpinBoundMillis, 1, maxMillis)
	o.integer("blockDeadlineMillis", &ov.BlockDeadlineMillis, 1, maxMillis)
	subs := o.sub("subscribers", nil) // every key is a processor name
	if subs == nil {
		return nil
	}
	ov.Subscribers = map[string]SubscriberOverload{}
	metas := map[string]subMeta{}
	for _, name := range sortedKeys(subs.m) {
		e := subs.m[name]
		var so SubscriberOverload
		sm := subMeta{line: e.key.Line}
		if isNull(e.val) {
			// "hook:" with no value: an override that changes nothing
		} else if s := d.object(e.val, subs.at(name), e.key.Line, subscriberKey); s != nil {
			s.enum("policy", &so.Policy, policies, nil)
			_, sm.spinSet = s.integer("spinBoundMillis", &so.SpinBoundMillis, 1, maxMillis)
			_, sm.blocSet = s.integer("blockDeadlineMillis", &so.BlockDeadlineMillis, 1, maxMillis)
		}
		ov.Subscribers[name] = so
		metas[name] = sm
	}
	return metas
}

func (d *decoder) processor(n *yaml.Node, path string) (*Processor, procMeta) {
	p := DefaultProcessor()
	p.Line = n.Line
	var m procMeta
	o := d.object(n, path, n.Line, processorKeys())
	if o == nil {
		return &p, m
	}
	m.nameLine = d.entryName(o, "name", &p.Name)
	if m.feedLine, _ = o.nonEmpty("feed", &p.Feed); m.feedLine == 0 {
		d.errorf(p.Line, "%s: missing feed (the name of the feed it subscribes to)", path)
	}
	types := SinkTypes()
	if line, _ := o.enum("type", &p.Type, types, nil); line == 0 {
		d.errorf(p.Line, "%s: missing type (one of %s)", path, strings.Join(types, ", "))
	}
	spec, _ := sinkSpec(p.Type)
	d.regex(o, "match", &p.Match, &p.Built.Match)
	d.regex(o, "exclude", &p.Exclude, &p.Built.Exclude)
	o.enum("onFailure", &p.OnFailure, onFailures, nil)
	d.retry(o.sub("retry", retryKeys), &p.Retry)
	m.pathLine = d.fileKeys(o, &p)
	p.PathLine = m.pathLine
	o.integer("ackTimeoutMillis", &p.AckTimeoutMillis, 1, maxMillis)
	o.integer("maxInFlight", &p.MaxInFlight, 1, maxCount)
	d.webhookKeys(o, &p, spec.OwnURL)
	if line, ok := o.enum("format", &p.Format, outFormats, nil); ok && p.Type != "" && !spec.Formats {
		d.errorf(line, "%s: format applies to %s processors, not %s", o.at("format"), typesWith(func(s SinkSpec) bool { return s.Formats }), p.Type)
	}
	d.sinkKeys(o, &p)
	return &p, m
}

// sinkKeys runs every registered type's Decode on the entry (see
// SinkSpec.Decode) and keeps the settings of p's own type.
func (d *decoder) sinkKeys(o *obj, p *Processor) {
	for _, name := range SinkTypes() {
		spec, _ := sinkSpec(name)
		if spec.Decode == nil {
			continue
		}
		own := name == p.Type
		if v := spec.Decode(&Section{o}, p, own); own {
			p.Settings = v
		}
	}
}

// fileKeys decodes the keys of the file sink; it returns the line of path.
func (d *decoder) fileKeys(o *obj, p *Processor) int {
	line, _ := o.filePath("path", &p.Path)
	o.boolean("exactlyOnce", &p.ExactlyOnce)
	o.enum("fsync", &p.Fsync, fsyncs, nil)
	o.integer("fsyncIntervalMillis", &p.FsyncIntervalMillis, 1, maxMillis)
	d.fileMode(o, "mode", &p.Mode)
	return line
}

// fileMode reads permission bits the way chmod does: octal digits with an
// optional 0 or 0o prefix, quoted ("0640") or not (0640, 640, 0o640 — the
// scalar's text, whatever number YAML made of it). At most 0777 (no
// setuid, setgid or sticky bit), and the owner must keep read and write
// (the sink appends, and reads its tail back after a crash).
func (d *decoder) fileMode(o *obj, key string, dst *uint32) {
	n, line, ok := o.get(key)
	if !ok {
		return
	}
	tag := n.ShortTag()
	if n.Kind != yaml.ScalarNode || (tag != "!!str" && tag != "!!int") {
		d.errorf(line, "%s: must be an octal file mode like \"0640\", got %s", o.at(key), describe(n))
		return
	}
	text := strings.TrimPrefix(strings.TrimPrefix(n.Value, "0o"), "0O")
	v, err := strconv.ParseUint(text, 8, 32)
	switch {
	case err != nil || text == "" || text[0] == '+':
		d.errorf(line, "%s: must be an octal file mode like \"0640\", got %s", o.at(key), describe(n))
	case v > 0o777:
		d.errorf(line, "%s: %04o has bits beyond 0777 (setuid, setgid or sticky); want permission bits only, like \"0640\"", o.at(key), v)
	case v&0o600 != 0o600:
		d.errorf(line, "%s: %04o does not let the owner read and write the output; want 0600 at least, like \"0640\"", o.at(key), v)
	default:
		*dst = uint32(v)
	}
}

// webhookKeys decodes the keys of the webhook sink, and url (also the nats
// sink's, which checks it itself: ownURL).
func (d *decoder) webhookKeys(o *obj, p *Processor, ownURL bool) {
	line, ok := o.nonEmpty("url", &p.URL)
	if ok && !ownURL {
		if err := checkURL(p.URL); err != "" {
			// Masked before clipped: a clip can cut the URL before its '@'.
			d.errorf(line, "%s: %q %s", o.at("url"), clip(redact.RawURL(p.URL)), err)
		}
	}
	o.integer("timeoutMillis", &p.TimeoutMillis, 1, maxMillis)
	o.integer("batchMaxLines", &p.BatchMaxLines, 1, maxCount)
	o.integer("batchMaxBytes", &p.BatchMaxBytes, 1, maxBytes)
	p.Headers = d.headers(o.sub("headers", nil))
	o.boolean("raw", &p.Raw)
	d.clientTLS(o, &p.TLS)
}

// has reports whether key is present with a non-null value.
func (o *obj) has(key string) bool {
	_, _, ok := o.get(key)
	return ok
}

// regex reads an optional RE2 expression and compiles it into re (the
// build step's value: nothing compiles it again).
func (d *decoder) regex(o *obj, key string, dst *string, re **regexp.Regexp) {
	line, ok := o.str(key, dst)
	if !ok || *dst == "" {
		return
	}
	var err error
	if *re, err = compileRegex(*dst); err != nil {
		d.errorf(line, "%s: bad regular expression: %s", o.at(key), strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
}

// checkURL returns "" for an absolute http(s) URL with a host.
func checkURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil && strings.Contains(s, "@"):
		// url.Parse's detail may quote the password (invalid port
		// ":<password>" for an unescaped '#'): not shown.
		return "is not a URL (a user name or password holding one of : / ? # [ ] @ % or a space needs percent-encoding, like %23 for #)"
	case err != nil:
		return "is not a URL: " + strings.TrimPrefix(err.Error(), "parse "+strconv.Quote(s)+": ")
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http:// or https:// URL"
	case u.Host == "":
		return "has no host"
	}
	return ""
}

func (d *decoder) retry(o *obj, r *Retry) {
	if o == nil {
		return
	}
	initLine, initOK := o.integer("initialMillis", &r.InitialMillis, 1, maxMillis)
	maxLine, maxOK := o.integer("maxMillis", &r.MaxMillis, 1, maxMillis)
	o.number("jitter", &r.Jitter, 0, 1)
	o.integer("attempts", &r.Attempts, 1, maxCount)
	if (initOK || maxOK) && r.MaxMillis < r.InitialMillis {
		line := maxLine
		if !maxOK {
			line = initLine
		}
		d.errorf(line, "%s: maxMillis (%d) must be at least initialMillis (%d)", o.path, r.MaxMillis, r.InitialMillis)
	}
}

// headers reads a mapping of HTTP header names to values.
func (d *decoder) headers(o *obj) map[string]string {
	if o == nil {
		return nil
	}
	h := map[string]string{}
	canon := map[string]string{}
	for _, name := range sortedKeys(o.m) {
		line := o.m[name].key.Line
		var v string
		if _, ok := o.str(name, &v); !ok && o.has(name) {
			continue
		}
		switch low := strings.ToLower(name); {
		case !validToken(name):
			d.errorf(line, "%s: %q is not a valid HTTP header name", o.path, clip(name))
		case low == "idempotency-key":
			d.errorf(line, "%s: %q is set by tailfeed (one key per batch) and cannot be configured", o.path, name)
		case strings.ContainsAny(v, "\r\n\x00"):
			d.errorf(line, "%s: the value of %q must not contain CR, LF or NUL", o.path, name)
		case canon[low] != "":
			d.errorf(line, "%s: %q repeats header %q (header names ignore case)", o.path, name, canon[low])
		default:
			canon[low] = name
			h[name] = v
		}
	}
	return h
}

// validToken reports whether s is an HTTP token (RFC 9110 §5.6.2).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
