package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pointerFloor is the least a 7a start must do for its pointers, with no
// reading, no daemon, no sink: n pointer files made durable the way DESIGN
// §3/§10 asks (created, flocked, sized, mapped, a record stored in each
// slot, msynced, unmapped, closed; the directory fsynced once), 32 at once
// as the glob does. It returns the wall and CPU time it took.
func pointerFloor(dir string, n int) (wall, cpu time.Duration, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, 0, err
	}
	usage := func() time.Duration {
		var r syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &r)
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	start, c0 := time.Now(), usage()
	var wg sync.WaitGroup
	var mu sync.Mutex
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if ferr := durablePointer(filepath.Join(dir, fmt.Sprintf("%016x.ptr", uint64(i)+1))); ferr != nil {
					mu.Lock()
					err = ferr
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if err != nil {
		return 0, 0, err
	}
	d, err := unix.Open(dir, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0, err
	}
	err = unix.Fsync(d)
	unix.Close(d)
	return time.Since(start), usage() - c0, err
}

func durablePointer(path string) error {
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return err
	}
	if err := unix.Ftruncate(fd, 1024); err != nil {
		return err
	}
	m, err := unix.Mmap(fd, 0, 1024, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	defer unix.Munmap(m)
	for i := range 56 {
		m[i], m[512+i] = byte(i), byte(i)
	}
	return unix.Msync(m, unix.MS_SYNC)
}
