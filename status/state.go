package status

import "net/http"

// StateOf finds a processor's state for GET /v1/state/{processor}: found
// false for an unknown processor, keeps false for one whose sink keeps no
// state (only count does); v is the JSON body otherwise.
type StateOf func(processor string) (v any, found, keeps bool)

// StateRoutes is GET /v1/state/{processor} over of: 200 with the state as
// JSON, 404 "no such processor: X" or "processor X keeps no state"; the
// token when one is set.
func StateRoutes(of StateOf) map[string]Route {
	return map[string]Route{
		"/v1/state/{processor}": {Methods: []string{http.MethodGet}, Protected: true,
			Handler: func(w http.ResponseWriter, r *http.Request) { state(w, r, of) }},
	}
}

func state(w http.ResponseWriter, r *http.Request, of StateOf) {
	name := r.PathValue("processor")
	v, found, keeps := of(name)
	switch {
	case !found:
		WriteError(w, http.StatusNotFound, "no such processor: "+name)
	case !keeps:
		WriteError(w, http.StatusNotFound, "processor "+name+" keeps no state")
	default:
		WriteJSON(w, http.StatusOK, v)
	}
}
