//go:build !unix

package status

func fdLimit() (int, bool) { return 0, false }

func outOfFDs(err error) bool { return false }
