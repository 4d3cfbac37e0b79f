package file

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"tailfeed/feed"
)

// TestFileSinkOpenCutsTornTail: kill -9 can end a batch's write(2) part way
// (e2e TestKill9 hit it). At open the sink cuts the bytes after the last
// '\n', so the next line is not glued to the torn piece.
func TestFileSinkOpenCutsTornTail(t *testing.T) {
	for _, tc := range []struct{ name, before, want string }{
		{"torn after lines", "a\nb\nlin", "a\nb\nc\n"},
		{"torn first write", "li", "c\n"},
		{"whole", "a\nb\n", "a\nb\nc\n"},
		{"empty", "", "c\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.log")
			if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(Config{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			b := feed.NewBatch()
			b.AppendLine([]byte("c"), 2)
			if done, err := s.ProcessBatch(context.Background(), b); done != 1 || err != nil {
				t.Fatalf("ProcessBatch = %d, %v", done, err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(path)
			if string(got) != tc.want {
				t.Errorf("output %q, want %q", got, tc.want)
			}
		})
	}
}
