package fileutil

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// parseLocks scans text in the /proc/locks format for a granted FLOCK on the
// file (major:minor device, inode) and returns its holder's pid. A line looks
// like
//
//	3: FLOCK  ADVISORY  WRITE 2788 fe:00:9977978 0 EOF
//
// with the device numbers in hex and the inode in decimal; waiters carry a
// "->" after the index and are skipped. A pid of 0 or less (a holder outside
// the reader's pid namespace) is not reported.
func parseLocks(r io.Reader, major, minor, ino uint64) (int, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		if !sameFile(fields[5], major, minor, ino) {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err == nil && pid > 0 {
			return pid, true
		}
	}
	return 0, false
}

// sameFile reports whether a "maj:min:inode" field names the file.
func sameFile(field string, major, minor, ino uint64) bool {
	parts := strings.Split(field, ":")
	if len(parts) != 3 {
		return false
	}
	maj, err1 := strconv.ParseUint(parts[0], 16, 64)
	mnr, err2 := strconv.ParseUint(parts[1], 16, 64)
	in, err3 := strconv.ParseUint(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return false
	}
	return maj == major && mnr == minor && in == ino
}
