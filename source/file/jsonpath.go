package file

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// The lists a glob writes at a stop (unread.list, moved.list) name files by
// path, as JSON: a file name that is not UTF-8 would be read back with
// U+FFFD for each bad byte — another path, not the file (audit 10B, on the
// epochs file). Such a path is also written exactly, base64, in a sibling
// field; the reader takes it.

// pathB64 is p in base64 when p is not valid UTF-8 ("" otherwise).
func pathB64(p string) string {
	if utf8.ValidString(p) {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(p))
}

// exactPath is the path of text and its base64 sibling b.
func exactPath(text, b string) string {
	if b == "" {
		return text
	}
	if p, err := base64.StdEncoding.DecodeString(b); err == nil {
		return string(p)
	}
	return text
}

type unreadJSON unreadEntry

// MarshalJSON writes the entry with its paths exact.
func (u unreadEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		unreadJSON
		PathB64  string `json:"pathBase64,omitempty"`
		FirstB64 string `json:"firstBase64,omitempty"`
	}{unreadJSON(u), pathB64(u.Path), pathB64(u.First)})
}

// UnmarshalJSON reads an entry, its paths exact.
func (u *unreadEntry) UnmarshalJSON(b []byte) error {
	var x struct {
		*unreadJSON
		PathB64  string `json:"pathBase64"`
		FirstB64 string `json:"firstBase64"`
	}
	x.unreadJSON = (*unreadJSON)(u)
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	u.Path, u.First = exactPath(u.Path, x.PathB64), exactPath(u.First, x.FirstB64)
	return nil
}

type movedJSON movedEntry

// MarshalJSON writes the entry with its path exact.
func (m movedEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		movedJSON
		PathB64 string `json:"pathBase64,omitempty"`
	}{movedJSON(m), pathB64(m.Path)})
}

// UnmarshalJSON reads an entry, its path exact.
func (m *movedEntry) UnmarshalJSON(b []byte) error {
	var x struct {
		*movedJSON
		PathB64 string `json:"pathBase64"`
	}
	x.movedJSON = (*movedJSON)(m)
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	m.Path = exactPath(m.Path, x.PathB64)
	return nil
}
