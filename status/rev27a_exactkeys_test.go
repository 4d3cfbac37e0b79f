package status

import (
	"net/http/httptest"
	"testing"
)

// TestRev27AOKExactKeysUnicodeFold: encoding/json also folds U+017F (ſ)
// to s and U+212A (K) to k; such keys name no field exactly and must
// answer 400 (DESIGN §7: unknown fields → 400).
func TestRev27AOKExactKeysUnicodeFold(t *testing.T) {
	type body struct {
		IDs  []string `json:"deliveryIds"`
		Kind string   `json:"kind"`
	}
	for _, in := range []string{`{"deliveryIdſ":["a"]}`, `{"Kind":"x"}`, "{\"\u212aind\":\"x\"}"} {
		var v body
		w := httptest.NewRecorder()
		if DecodeJSON(w, []byte(in), &v) || w.Code != 400 {
			t.Errorf("DecodeJSON(%s) accepted (%d), decoded %+v; want 400", in, w.Code, v)
		}
	}
}
