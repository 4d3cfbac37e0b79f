//go:build !linux

package main

import (
	"errors"
	"time"
)

func pointerFloor(string, int) (time.Duration, time.Duration, error) {
	return 0, 0, errors.New("pointer floor: Linux only")
}
