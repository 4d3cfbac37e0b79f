package postgres

import (
	"cmp"
	"fmt"
	"strings"

	"tailfeed/config"
	"tailfeed/sink"
)

func init() {
	sink.Register(Type, sink.Type{New: open, Config: config.SinkSpec{Keys: keys, Decode: decode, Check: checkTables},
		Describe: func(pc *config.Processor) []any {
			return []any{"target", "postgres table " + settings(pc).Table} // the DSN holds secrets: never logged
		},
		Target: func(pc *config.Processor) string {
			st := settings(pc)
			return st.DSN + "\x00" + st.Table
		},
		Instance: true})
}

// open builds a postgres sink from its processor entry.
func open(env sink.Env) (any, error) {
	pc := env.Config
	st := settings(pc)
	return Open(Config{
		Group:           env.Group,
		DSN:             st.DSN,
		Table:           st.Table,
		CreateTable:     st.CreateTable,
		Instance:        env.Instance,
		Feed:            env.Feed.Name,
		Timeout:         pc.Built.Timeout,
		DSNKey:          cmp.Or(st.DSNAt, fmt.Sprintf("processors[%s].dsn", pc.Name)),
		PasswordLiteral: st.PasswordLiteral,
		Logger:          env.Logger,
	})
}

// checkTables reports a postgres processor whose table is another postgres
// processor's marks table (MarksIdent: <table>_marks cut to 63 bytes): the
// two would write each other's rows. Their DSNs may name two databases;
// the names are refused anyway (rename one table).
//
// It also reports two postgres processors of one feed writing one table
// (DESIGN §11): the table's rows are the record, max(position) per
// (instance, feed, epoch), so each would take the other's rows for its own
// and skip lines it never wrote — a filtered processor's last row made an
// unfiltered one skip every line before it. Like nats' rule for a feed and
// a stream; by name, as above.
func checkTables(cfg *config.Config, errorf func(line int, format string, args ...any)) {
	tables := map[[2]string]int{}
	for i, p := range cfg.Processors {
		st, ok := p.Settings.(*Settings)
		if p.Type != Type || !ok || st.Table == "" || p.Feed == "" {
			continue
		}
		k := [2]string{p.Feed, strings.Join(qualified(st.Table), ".")}
		if j, dup := tables[k]; dup {
			q := cfg.Processors[j]
			errorf(max(st.tableLine, p.Line), "processors[%d].table: postgres processor %q (line %d) also writes feed %q into table %s; two postgres processors cannot share a feed and a table (each would take the other's rows for its record)",
				i, q.Name, max(settings(q).tableLine, q.Line), config.Clip(p.Feed), st.Table)
			continue
		}
		tables[k] = i
	}
	marks := map[string]int{}
	for i, p := range cfg.Processors {
		st, ok := p.Settings.(*Settings)
		if p.Type != Type || !ok || st.Table == "" {
			continue
		}
		marks[strings.Join(MarksIdent(qualified(st.Table)), ".")] = i
	}
	for i, p := range cfg.Processors {
		st, ok := p.Settings.(*Settings)
		if p.Type != Type || !ok || st.Table == "" {
			continue
		}
		if j, clash := marks[strings.Join(qualified(st.Table), ".")]; clash && j != i {
			q := cfg.Processors[j]
			errorf(p.Line, "processors[%d].table: %s is the marks table of postgres processor %q (line %d), whose table is %s; rename one of them",
				i, st.Table, q.Name, q.Line, settings(q).Table)
		}
	}
}

// qualified is a table's [schema.]table parts with the schema PostgreSQL
// takes by default written out, so that "lines" and "public.lines" compare.
func qualified(table string) []string {
	parts := strings.Split(table, ".")
	if len(parts) == 1 {
		return []string{"public", parts[0]}
	}
	return parts
}
