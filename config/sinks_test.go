package config_test

// The sink types the tests' configs name register themselves with config
// from their packages (config holds no list of types).
import (
	_ "tailfeed/sink/count"
	_ "tailfeed/sink/discard"
	_ "tailfeed/sink/file"
	_ "tailfeed/sink/kafka"
	_ "tailfeed/sink/nats"
	_ "tailfeed/sink/postgres"
	_ "tailfeed/sink/pull"
	_ "tailfeed/sink/stdout"
	_ "tailfeed/sink/webhook"
)
