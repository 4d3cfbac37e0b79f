package postgres

import (
	"fmt"

	"tailfeed/config"
	"tailfeed/sink"
)

func init() {
	sink.Register(Type, sink.Type{New: open, Config: config.SinkSpec{Keys: keys, Decode: decode},
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
		DSNKey:          fmt.Sprintf("processors[%s].dsn", pc.Name),
		PasswordLiteral: st.PasswordLiteral,
		Logger:          env.Logger,
	})
}
