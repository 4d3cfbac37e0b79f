package config

// Unexported values the external tests (package config_test) check
// against; the tests that need a sink type are external, so that they can
// import the sinks (which import config).
var (
	Strategies = strategies
	Policies   = policies
	ValidName  = validName
	MaxErrors  = maxErrors
	CheckURL   = checkURL
)
