package webhook

import (
	"path/filepath"
	"time"

	"tailfeed/sink"
)

func init() {
	sink.Register("webhook", sink.Type{New: open})
}

// open builds a webhook sink on its group; its record is
// dataDir/state/<processor>.rec. It asks the feed's publisher whether the
// source waits for a request it rebuilds after a restart.
func open(env sink.Env) (any, error) {
	pc := env.Config
	return OpenWebhook(WebhookConfig{
		Group:         env.Group,
		Publisher:     env.Publisher,
		URL:           pc.URL,
		Timeout:       time.Duration(pc.TimeoutMillis) * time.Millisecond,
		BatchMaxLines: pc.BatchMaxLines,
		BatchMaxBytes: pc.BatchMaxBytes,
		Headers:       pc.Headers,
		Raw:           pc.Raw,
		Record:        filepath.Join(env.DataDir, "state", pc.Name+".rec"),
	})
}
