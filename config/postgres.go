package config

import (
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// validTable is a PostgreSQL table name the sink quotes as written:
// lower-case unquoted identifiers, optionally schema-qualified.
var validTable = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)

// postgresKeys decodes the keys of the postgres sink (DESIGN §11): dsn and
// table are required for it. The DSN is a secret: no message shows it.
func (d *decoder) postgresKeys(o *obj, p *Processor, path string) {
	dsnLine, ok := o.nonEmpty("dsn", &p.DSN)
	if ok && p.Type == TypePostgres {
		if _, err := pgconn.ParseConfig(p.DSN); err != nil {
			d.errorf(dsnLine, "%s: cannot parse the connection string: %s", o.at("dsn"), DSNProblem(err, p.DSN))
		}
	}
	tableLine, ok := o.nonEmpty("table", &p.Table)
	if ok && len(p.Table) <= 2*63+1 && !validTable.MatchString(p.Table) {
		d.errorf(tableLine, "%s: %q is not a table name: want lower-case letters, digits and _, optionally schema.table", o.at("table"), clip(p.Table))
	} else if ok && len(p.Table) > 2*63+1 {
		d.errorf(tableLine, "%s: too long (at most 63 bytes per name)", o.at("table"))
	}
	o.boolean("createTable", &p.CreateTable)
	if p.Type != TypePostgres {
		return
	}
	if dsnLine == 0 {
		d.errorf(p.Line, "%s: a postgres processor needs dsn (a connection string, like \"host=db user=tailfeed dbname=logs sslmode=verify-full\")", path)
	}
	if tableLine == 0 {
		d.errorf(p.Line, "%s: a postgres processor needs table", path)
	}
}

// DSNProblem is what a connection string parse error says, without the
// connection string (pgx quotes it with the password masked on a best
// effort basis; a DSN is a secret whole: never shown).
func DSNProblem(err error, dsn string) string {
	msg := err.Error()
	if strings.HasPrefix(msg, "cannot parse `") {
		if i := strings.LastIndex(msg, "`: "); i > 0 {
			msg = msg[i+3:]
		}
	}
	if dsn != "" {
		msg = strings.ReplaceAll(msg, dsn, "***")
	}
	return msg
}
