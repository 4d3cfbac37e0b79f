package postgres

import (
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"tailfeed/config"
)

// The postgres processor's config keys (DESIGN §7, §11), registered with
// the sink (register.go): dsn and table are required. The DSN is a
// secret: no message shows it. It also reads the common key timeoutMillis.

// Type is the sink's type name in the config.
const Type = "postgres"

// keys are the processor keys only the postgres sink reads.
var keys = []string{"dsn", "table", "createTable"}

// Settings are a postgres processor's own keys (config.Processor.Settings).
type Settings struct {
	DSN         string // the connection string (a secret: never shown)
	Table       string // [schema.]table
	CreateTable bool   // create the table and its unique key when missing
	// DSNReferenced: the file writes dsn with a ${VAR} reference and not
	// the password as it is: a password from the environment, not a
	// literal secret of the file (no WARN at start).
	DSNReferenced bool
}

// validTable is a PostgreSQL table name the sink quotes as written:
// lower-case unquoted identifiers, optionally schema-qualified.
var validTable = regexp.MustCompile(`^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$`)

// settings are pc's postgres settings (zero for another type's entry).
func settings(pc *config.Processor) *Settings {
	if st, ok := pc.Settings.(*Settings); ok {
		return st
	}
	return &Settings{}
}

// decode reads the postgres keys of any processor, and checks what a
// postgres processor needs when own.
func decode(s *config.Section, p *config.Processor, own bool) any {
	st := &Settings{}
	dsnLine, ok := s.NonEmpty("dsn", &st.DSN)
	if ok && own {
		if cc, err := pgconn.ParseConfig(st.DSN); err != nil {
			s.Errorf(dsnLine, "%s: cannot parse the connection string: %s", s.At("dsn"), DSNProblem(err, st.DSN))
		} else if w := s.Written("dsn"); config.HasReference(w) && (cc.Password == "" || !strings.Contains(w, cc.Password)) {
			st.DSNReferenced = true
		}
	}
	tableLine, ok := s.NonEmpty("table", &st.Table)
	if ok && len(st.Table) <= 2*63+1 && !validTable.MatchString(st.Table) {
		s.Errorf(tableLine, "%s: %q is not a table name: want lower-case letters, digits and _, optionally schema.table", s.At("table"), config.Clip(st.Table))
	} else if ok && len(st.Table) > 2*63+1 {
		s.Errorf(tableLine, "%s: too long (at most 63 bytes per name)", s.At("table"))
	}
	s.Bool("createTable", &st.CreateTable)
	if !own {
		return st
	}
	if dsnLine == 0 {
		s.Errorf(p.Line, "%s: a postgres processor needs dsn (a connection string, like \"host=db user=tailfeed dbname=logs sslmode=verify-full\")", s.Path())
	}
	if tableLine == 0 {
		s.Errorf(p.Line, "%s: a postgres processor needs table", s.Path())
	}
	return st
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
