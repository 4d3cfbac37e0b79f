package status

import (
	"net/http/httptest"
	"testing"
)

// Keys match the contract's field names exactly (audit 9B: encoding/json
// took {"DELIVERYID": …} for deliveryId, so a misspelt ACK acknowledged a
// line instead of answering 400).
func TestDecodeJSONKeysAreCaseSensitive(t *testing.T) {
	type inner struct {
		Max int `json:"max"`
	}
	type body struct {
		ID    *string `json:"deliveryId"`
		IDs   []string
		Inner inner   `json:"inner"`
		List  []inner `json:"list"`
		Free  map[string]int
	}
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`{"deliveryId":"a"}`, true},
		{`{"IDs":["a"],"inner":{"max":1},"list":[{"max":2}],"Free":{"ANY":1}}`, true},
		{`null`, true},
		{`{"DELIVERYID":"a"}`, false},
		{`{"deliveryID":"a"}`, false},
		{`{"ids":["a"]}`, false},
		{`{"inner":{"MAX":1}}`, false},
		{`{"list":[{"max":1},{"Max":2}]}`, false},
	} {
		var v body
		w := httptest.NewRecorder()
		if got := DecodeJSON(w, []byte(c.in), &v); got != c.ok {
			t.Errorf("DecodeJSON(%s) = %v (%d %s), want %v", c.in, got, w.Code, w.Body, c.ok)
		} else if !got && w.Code != 400 {
			t.Errorf("DecodeJSON(%s): status %d, want 400", c.in, w.Code)
		}
	}
}
