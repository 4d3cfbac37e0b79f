package status

import (
	"context"
	"net/http"
	"time"
)

// ConfigReport is feed.status's "config" (DESIGN §12 "Reload"): the running
// config file, when it was loaded (RFC 3339), the successful and failed
// reloads this run, and the errors of the last failed reload (null after a
// successful one; the messages joined one per line).
type ConfigReport struct {
	Path           string  `json:"path"`
	LoadedAt       string  `json:"loadedAt"`
	Reloads        uint64  `json:"reloads"`
	ReloadFailures uint64  `json:"reloadFailures"`
	LastError      *string `json:"lastError"`
}

var mReloads = desc("reloads_total", "Config reloads this run (SIGHUP, POST /admin/reload) by result.", []string{"result"})

// ReloadWait bounds a POST /admin/reload: stopping a changed feed takes up
// to shutdownTimeoutMillis.
const ReloadWait = 5 * time.Minute

// ReloadRoute is POST /admin/reload (token; empty body): reload calls the
// daemon's reload, which answers 200 {"status":"reloaded"} or 400
// {"error"} with every FILE:LINE: message (or the bind error of a new
// status.listen).
func ReloadRoute(reload func(ctx context.Context) error) Route {
	return Route{Methods: []string{http.MethodPost}, Protected: true, Handler: func(w http.ResponseWriter, r *http.Request) {
		var one [1]byte
		if n, _ := r.Body.Read(one[:]); n > 0 {
			WriteError(w, http.StatusBadRequest, "POST /admin/reload takes no body")
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), ReloadWait)
		defer cancel()
		if err := reload(ctx); err != nil {
			WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		WriteJSON(w, http.StatusOK, map[string]string{"status": "reloaded"})
	}}
}
