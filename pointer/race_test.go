//go:build race

package pointer

const raceEnabled = true
