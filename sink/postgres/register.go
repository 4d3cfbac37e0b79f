package postgres

import (
	"fmt"

	"tailfeed/sink"
)

func init() {
	sink.Register("postgres", sink.Type{New: open})
}

// open builds a postgres sink from its processor entry.
func open(env sink.Env) (any, error) {
	pc := env.Config
	return Open(Config{
		Group:       env.Group,
		DSN:         pc.DSN,
		Table:       pc.Table,
		CreateTable: pc.CreateTable,
		Instance:    env.Instance,
		Feed:        env.Feed.Name,
		Timeout:     pc.Built.Timeout,
		DSNKey:      fmt.Sprintf("processors[%s].dsn", pc.Name),
		Logger:      env.Logger,
	})
}
