package config

import "regexp"

// validTable is a PostgreSQL table name the sink quotes as written:
// lower-case unquoted identifiers, optionally schema-qualified.
var validTable = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)

// postgresKeys decodes the keys of the postgres sink (DESIGN §11): dsn and
// table are required for it. The DSN is a secret: no message shows it.
func (d *decoder) postgresKeys(o *obj, p *Processor, path string) {
	dsnLine, _ := o.nonEmpty("dsn", &p.DSN)
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
