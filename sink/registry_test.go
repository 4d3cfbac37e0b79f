package sink_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"tailfeed/sink"
	"tailfeed/status"
)

// TestRegisterLookupRoutes: a registered type is found by name with its
// routes, whose handlers reach a sink through sinkOf; a second
// registration of a name panics.
func TestRegisterLookupRoutes(t *testing.T) {
	sink.Register("test-echo", sink.Type{
		New: func(env sink.Env) (any, error) { return env.Config, nil },
		Routes: func(sinkOf func(string) any) map[string]status.Route {
			return map[string]status.Route{"/test/echo/{name}": {Methods: []string{http.MethodGet},
				Handler: func(w http.ResponseWriter, r *http.Request) {
					if sinkOf(r.PathValue("name")) == nil {
						w.WriteHeader(http.StatusNotFound)
					}
				}}}
		},
	})
	if _, ok := sink.Lookup("test-echo"); !ok {
		t.Fatal("registered type not found")
	}
	if _, ok := sink.Lookup("test-none"); ok {
		t.Fatal("unregistered type found")
	}
	rs := sink.Routes(func(name string) any {
		if name == "here" {
			return struct{}{}
		}
		return nil
	})
	rt, ok := rs["/test/echo/{name}"]
	if !ok {
		t.Fatalf("routes %v lack the type's", rs)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/test/echo/{name}", rt.Handler)
	for name, want := range map[string]int{"here": http.StatusOK, "nobody": http.StatusNotFound} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/test/echo/"+name, nil))
		if rec.Code != want {
			t.Fatalf("GET /test/echo/%s = %d, want %d", name, rec.Code, want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a second registration of a name did not panic")
		}
	}()
	sink.Register("test-echo", sink.Type{New: func(sink.Env) (any, error) { return nil, nil }})
}
