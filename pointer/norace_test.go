//go:build !race

package pointer

const raceEnabled = false
