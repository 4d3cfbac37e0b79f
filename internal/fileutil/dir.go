package fileutil

import "os"

// SyncDir fsyncs the directory dir, so that entries created, renamed or
// removed in it survive a power loss.
func SyncDir(dir string) error {
	d, err := OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}
