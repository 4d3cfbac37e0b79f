package webhook

import (
	"tailfeed/internal/datadir"
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
		Timeout:       pc.Built.Timeout,
		BatchMaxLines: pc.BatchMaxLines,
		BatchMaxBytes: pc.BatchMaxBytes,
		Headers:       pc.Headers,
		Raw:           pc.Raw,
		Record:        datadir.Record(env.DataDir, pc.Name),
	})
}
