package file

import "fmt"

// State is a source's state as the status report shows it.
type State int32

const (
	Starting State = iota
	WaitingForFile
	Behind
	CaughtUp
	EndOfStream
	Failed
)

func (s State) String() string {
	switch s {
	case Starting:
		return "STARTING"
	case WaitingForFile:
		return "WAITING_FOR_FILE"
	case Behind:
		return "BEHIND"
	case CaughtUp:
		return "CAUGHT_UP"
	case EndOfStream:
		return "END_OF_STREAM"
	case Failed:
		return "FAILED"
	}
	return fmt.Sprintf("State(%d)", int32(s))
}

// resting: nothing is left to read for now (or ever).
func (s State) resting() bool {
	return s == CaughtUp || s == WaitingForFile || s == EndOfStream || s == Failed
}

// Strategy is where a source starts reading and whether it stops.
type Strategy int

const (
	Committed    Strategy = iota // resume at the pointer, tail
	Earliest                     // from 0, tail
	Latest                       // from the end, tail
	OnceEarliest                 // from 0 to the size at open, then END_OF_STREAM
	OnceLatest                   // END_OF_STREAM at once, nothing delivered
)

// ParseStrategy turns a config word into a Strategy (COMMITED is an alias).
func ParseStrategy(s string) (Strategy, error) {
	switch s {
	case "", "COMMITTED", "COMMITED":
		return Committed, nil
	case "EARLIEST":
		return Earliest, nil
	case "LATEST":
		return Latest, nil
	case "ONCE_EARLIEST":
		return OnceEarliest, nil
	case "ONCE_LATEST":
		return OnceLatest, nil
	}
	return Committed, fmt.Errorf("file: unknown read strategy %q", s)
}

// Bounded reports whether the strategy stops at END_OF_STREAM.
func (s Strategy) Bounded() bool { return s == OnceEarliest || s == OnceLatest }

func (s Strategy) String() string {
	return [...]string{"COMMITTED", "EARLIEST", "LATEST", "ONCE_EARLIEST", "ONCE_LATEST"}[s]
}
