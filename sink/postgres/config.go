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
	// PasswordLiteral: the file itself writes the dsn's password (not a
	// ${VAR} reference, not PGPASSWORD or a .pgpass file): a literal
	// secret, a WARN at start (DESIGN §11 Secrets).
	PasswordLiteral bool
	// DSNAt names the dsn key as config errors and the nats sink's
	// warnings do (processors[i].dsn).
	DSNAt string `reload:"-"`

	tableLine int // the line of table (config errors across entries)
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
	st := &Settings{DSNAt: s.At("dsn")}
	dsnLine, ok := s.NonEmpty("dsn", &st.DSN)
	if ok && own {
		if cc, err := pgconn.ParseConfig(st.DSN); err != nil {
			s.Errorf(dsnLine, "%s: cannot parse the connection string: %s", s.At("dsn"), DSNProblem(err, st.DSN))
		} else if cc.Password != "" && literalPassword(config.FileText(s.Written("dsn"))) {
			st.PasswordLiteral = true
		}
	}
	tableLine, ok := s.NonEmpty("table", &st.Table)
	if ok && len(st.Table) <= 2*63+1 && !validTable.MatchString(st.Table) {
		s.Errorf(tableLine, "%s: %q is not a table name: want lower-case letters, digits and _, optionally schema.table", s.At("table"), config.Clip(st.Table))
	} else if ok && len(st.Table) > 2*63+1 {
		s.Errorf(tableLine, "%s: too long (at most 63 bytes per name)", s.At("table"))
	}
	st.tableLine = tableLine
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

// literalPassword reports whether a DSN as the file supplies it
// (config.FileText: the environment's parts are config.EnvMark) holds a
// password of its own: the password of a URL's userinfo, or the value of a
// password= keyword or query parameter (quoted or not) — wherever the
// environment's parts sit around it ("${BASE} password=x", "${URL}?password=x").
func literalPassword(t string) bool {
	own := func(v string) bool { return strings.ReplaceAll(v, config.EnvMark, "") != "" }
	if _, rest, ok := strings.Cut(t, "://"); ok {
		host := rest
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			host = rest[:i]
		}
		if at := strings.LastIndexByte(host, '@'); at >= 0 {
			if _, pw, ok := strings.Cut(host[:at], ":"); ok && own(pw) {
				return true
			}
		}
	}
	const key = "password"
	for i := 0; ; {
		j := strings.Index(t[i:], key)
		if j < 0 {
			return false
		}
		at := i + j
		i = at + len(key)
		if at > 0 && !strings.ContainsRune(" \t\n\r\f\v?&"+config.EnvMark, rune(t[at-1])) {
			continue // part of another key (e.g. sslpassword)
		}
		for i < len(t) && strings.ContainsRune(" \t\n\r\f\v", rune(t[i])) {
			i++ // libpq allows spaces around '='
		}
		if i >= len(t) || t[i] != '=' {
			continue
		}
		i++
		for i < len(t) && strings.ContainsRune(" \t\n\r\f\v", rune(t[i])) {
			i++
		}
		var v strings.Builder
		if i < len(t) && t[i] == '\'' {
			for i++; i < len(t) && t[i] != '\''; i++ {
				if t[i] == '\\' && i+1 < len(t) {
					i++
				}
				v.WriteByte(t[i])
			}
		} else {
			for ; i < len(t) && !strings.ContainsRune(" \t\n\r\f\v&#", rune(t[i])); i++ {
				if t[i] == '\\' && i+1 < len(t) {
					i++
				}
				v.WriteByte(t[i])
			}
		}
		if own(v.String()) {
			return true
		}
	}
}
