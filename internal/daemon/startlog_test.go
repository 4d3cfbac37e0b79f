package daemon

import (
	"fmt"
	"strings"
	"testing"

	"tailfeed/config"
)

// TestStartLogNamesEveryTarget: the start-up log's target of each sink type
// (its sink.Type.Describe since each type registers its own) names where
// the lines go, and never a secret (a URL's password, the postgres DSN).
func TestStartLogNamesEveryTarget(t *testing.T) {
	src := strings.Join([]string{
		"feeds:",
		"  - {name: app, path: /var/log/app.log}",
		"processors:",
		"  - {name: f, feed: app, type: file, path: /out/app.log, fsync: always}",
		"  - {name: p, feed: app, type: pull}",
		"  - {name: w, feed: app, type: webhook, url: 'https://u:hunter22@hooks.example/in'}",
		"  - {name: c, feed: app, type: count, exactlyOnce: true}",
		"  - {name: d, feed: app, type: discard}",
		"  - {name: s, feed: app, type: stdout, format: json}",
		"  - {name: k, feed: app, type: kafka, brokers: ['k1:9092', 'k2:9092'], topic: logs}",
		"  - {name: n, feed: app, type: nats, url: 'nats://u:hunter22@n1:4222', stream: LOGS, subject: logs.x}",
		"  - {name: g, feed: app, type: postgres, dsn: 'host=db password=hunter22 dbname=logs', table: lines}",
	}, "\n") + "\n"
	cfg, err := config.Parse([]byte(src), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"f": "[target /out/app.log format raw fsync always exactlyOnce false]",
		"p": "[target pulled by clients: GET /v1/pull/p]",
		"w": "[target https://***@hooks.example/in]",
		"c": "[target counts, at GET /v1/state/c exactlyOnce true]",
		"d": "[target discarded]",
		"s": "[target standard output format json]",
		"k": "[target kafka topic logs at k1:9092,k2:9092 exactlyOnce false]",
		"n": "[target nats stream LOGS subject logs.x at nats://***@n1:4222 exactlyOnce false]",
		"g": "[target postgres table lines]",
	}
	for _, pc := range cfg.Processors {
		got := fmt.Sprint(target(pc))
		if got != want[pc.Name] {
			t.Errorf("%s (%s): target %s, want %s", pc.Name, pc.Type, got, want[pc.Name])
		}
		if strings.Contains(got, "hunter22") {
			t.Errorf("%s: the target shows a secret: %s", pc.Name, got)
		}
	}
}

// TestTargetChangedPerType: a reload starts a processor afresh when its
// durable target changes (its sink.Type.Target: file path, webhook url,
// postgres dsn or table, kafka topic or offsetsTopic, nats stream or
// subject) or its type does, and not for another key.
func TestTargetChangedPerType(t *testing.T) {
	parse := func(proc string) *config.Processor {
		t.Helper()
		cfg, err := config.Parse([]byte("feeds:\n  - {name: app, path: /var/log/app.log}\nprocessors:\n  - "+proc+"\n"), "t.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Processors[0]
	}
	for _, c := range []struct {
		a, b    string
		changed bool
	}{
		{"{name: p, feed: app, type: file, path: /o/a}", "{name: p, feed: app, type: file, path: /o/b}", true},
		{"{name: p, feed: app, type: file, path: /o/a}", "{name: p, feed: app, type: file, path: /o/a, fsync: always}", false},
		{"{name: p, feed: app, type: webhook, url: 'http://h/a'}", "{name: p, feed: app, type: webhook, url: 'http://h/b'}", true},
		{"{name: p, feed: app, type: webhook, url: 'http://h/a'}", "{name: p, feed: app, type: webhook, url: 'http://h/a', raw: true}", false},
		{"{name: p, feed: app, type: postgres, dsn: 'host=a', table: t}", "{name: p, feed: app, type: postgres, dsn: 'host=b', table: t}", true},
		{"{name: p, feed: app, type: postgres, dsn: 'host=a', table: t}", "{name: p, feed: app, type: postgres, dsn: 'host=a', table: u}", true},
		{"{name: p, feed: app, type: postgres, dsn: 'host=a', table: t}", "{name: p, feed: app, type: postgres, dsn: 'host=a', table: t, createTable: true}", false},
		{"{name: p, feed: app, type: kafka, brokers: ['k:1'], topic: a}", "{name: p, feed: app, type: kafka, brokers: ['k:1'], topic: b}", true},
		{"{name: p, feed: app, type: kafka, brokers: ['k:1'], topic: a}", "{name: p, feed: app, type: kafka, brokers: ['k:1'], topic: a, offsetsTopic: o}", true},
		{"{name: p, feed: app, type: kafka, brokers: ['k:1'], topic: a}", "{name: p, feed: app, type: kafka, brokers: ['k:2'], topic: a}", false},
		{"{name: p, feed: app, type: nats, url: 'nats://n:1', stream: S, subject: a.x}", "{name: p, feed: app, type: nats, url: 'nats://n:1', stream: S, subject: b.x}", true},
		{"{name: p, feed: app, type: nats, url: 'nats://n:1', stream: S, subject: a.x}", "{name: p, feed: app, type: nats, url: 'nats://n:1', stream: T, subject: a.x}", true},
		{"{name: p, feed: app, type: nats, url: 'nats://n:1', stream: S, subject: a.x}", "{name: p, feed: app, type: nats, url: 'nats://n:2', stream: S, subject: a.x}", false},
		{"{name: p, feed: app, type: discard}", "{name: p, feed: app, type: pull}", true},
	} {
		if got := targetChanged(parse(c.a), parse(c.b)); got != c.changed {
			t.Errorf("%s → %s: targetChanged %v, want %v", c.a, c.b, got, c.changed)
		}
	}
}

// TestInstanceChangedPerType: a reload that changes instance changes the
// processors that put it in an engine-side identity (kafka, nats,
// postgres), not the others; their targets stay (their state is kept).
func TestInstanceChangedPerType(t *testing.T) {
	parse := func(instance, proc string) *config.Config {
		t.Helper()
		cfg, err := config.Parse([]byte("instance: "+instance+"\nfeeds:\n  - {name: app, path: /var/log/app.log}\nprocessors:\n  - "+proc+"\n"), "t.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	for _, c := range []struct {
		proc string
		uses bool
	}{
		{"{name: p, feed: app, type: kafka, brokers: ['k:1'], topic: a}", true},
		{"{name: p, feed: app, type: nats, url: 'nats://n:1', stream: S, subject: 'a.{instance}'}", true},
		{"{name: p, feed: app, type: postgres, dsn: 'host=a', table: t}", true},
		{"{name: p, feed: app, type: file, path: /o/a}", false},
		{"{name: p, feed: app, type: webhook, url: 'http://h/a'}", false},
	} {
		a, b := parse("host-a", c.proc), parse("host-b", c.proc)
		if got := instanceChanged(a, b, b.Processors); got != c.uses {
			t.Errorf("%s: instanceChanged %v, want %v", c.proc, got, c.uses)
		}
		if instanceChanged(a, parse("host-a", c.proc), b.Processors) {
			t.Errorf("%s: instanceChanged with the same instance", c.proc)
		}
		if targetChanged(a.Processors[0], b.Processors[0]) {
			t.Errorf("%s: an instance change changed the target", c.proc)
		}
	}
}
