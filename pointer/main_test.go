package pointer

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"

	"tailfeed/internal/fileutil"
)

// holderEnv names a pointer file that a re-executed test binary opens and
// holds until its stdin closes (the os/exec helper-process idiom).
const holderEnv = "POINTER_TEST_HOLD"

func TestMain(m *testing.M) {
	if path := os.Getenv(holderEnv); path != "" {
		os.Exit(holdPointer(path))
	}
	os.Exit(m.Run())
}

func holdPointer(path string) int {
	p, err := Open(path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer p.Close()
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// logBuf is an hclog logger that keeps its output for assertions.
type logBuf struct {
	bytes.Buffer
	hclog.Logger
}

func newLog() *logBuf {
	l := &logBuf{}
	l.Logger = hclog.New(&hclog.LoggerOptions{Output: &l.Buffer, Level: hclog.Debug})
	return l
}

// warned reports whether a WARN line containing substr was logged.
func (l *logBuf) warned(substr string) bool {
	for _, line := range bytes.Split(l.Bytes(), []byte("\n")) {
		if bytes.Contains(line, []byte("[WARN]")) && bytes.Contains(line, []byte(substr)) {
			return true
		}
	}
	return false
}

func (l *logBuf) anyWarn() bool { return bytes.Contains(l.Bytes(), []byte("[WARN]")) }

// ptrPath returns a pointer file path in a fresh temp dir.
func ptrPath(t *testing.T) string { return filepath.Join(t.TempDir(), "app.ptr") }

// mustOpen opens a pointer and, at the end of the test, closes it and
// checks the invariant (as bbolt's btesting does): a file mapped for real
// decodes, to the pointer's record if that was synced.
func mustOpen(t *testing.T, path string, opts Options) *Pointer {
	t.Helper()
	p, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		synced, rec, closed := p.Synced(), p.Record(), p.closed
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if opts.Map != nil || closed {
			return // a fake mapping never wrote the file; or the test closed it and may have damaged it
		}
		got, err := Inspect(path)
		if err != nil || (synced && got != rec) {
			t.Errorf("pointer file after the test: %+v, %v; want %+v", got, err, rec)
		}
	})
	return p
}

// readFile returns the pointer file's bytes.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// slots decodes both slots of buf on their own.
func slots(buf []byte) (a, b Record, errA, errB error) {
	a, errA = decodeSlot(slotBytes(buf, 0), 'A')
	b, errB = decodeSlot(slotBytes(buf, 1), 'B')
	return a, b, errA, errB
}

// build returns a pointer file holding records a and b (nil: zero slot).
func build(a, b *Record) []byte {
	buf := make([]byte, Size)
	if a != nil {
		encodeSlot(slotBytes(buf, 0), a)
	}
	if b != nil {
		encodeSlot(slotBytes(buf, 1), b)
	}
	return buf
}

// fakeMapping holds the pointer bytes in memory. disk is what the last
// successful Flush wrote; a failing Flush returns the next queued error and,
// like a kernel that drops the dirty page after an I/O error, puts the disk
// content back into memory, so a flush that does not rewrite first persists
// nothing new.
type fakeMapping struct {
	mem, disk []byte
	fail      []error // results of the next flushes, nil entries succeed
	flushes   int
}

func (m *fakeMapping) Bytes() []byte { return m.mem }
func (m *fakeMapping) Close() error  { return nil }

func (m *fakeMapping) Flush() error {
	m.flushes++
	if len(m.fail) > 0 {
		err := m.fail[0]
		m.fail = m.fail[1:]
		if err != nil {
			copy(m.mem, m.disk)
			return err
		}
	}
	copy(m.disk, m.mem)
	return nil
}

// fakeMap returns an Options.Map that loads the file into fake.
func fakeMap(fake *fakeMapping) func(*os.File) (Mapping, error) {
	return func(f *os.File) (Mapping, error) {
		fake.mem = make([]byte, Size)
		if _, err := f.ReadAt(fake.mem, 0); err != nil {
			return nil, err
		}
		fake.disk = bytes.Clone(fake.mem)
		return fake, nil
	}
}

// input writes content to path and returns it opened, with its key and size.
func input(t *testing.T, path string, content []byte) (*os.File, uint64, int64) {
	t.Helper()
	if err := os.WriteFile(path, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return openInput(t, path)
}

// openInput opens the file at path as a source would.
func openInput(t *testing.T, path string) (*os.File, uint64, int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, fileKeyOf(t, f), sizeOf(t, f)
}

func fileKeyOf(t *testing.T, f *os.File) uint64 {
	t.Helper()
	dev, ino, err := fileutil.DevIno(f)
	if err != nil {
		t.Fatal(err)
	}
	return FileKey(dev, ino)
}

func sizeOf(t *testing.T, f *os.File) int64 {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
