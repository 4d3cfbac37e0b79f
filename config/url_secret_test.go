package config_test

import (
	"strings"
	"testing"
)

// A bad url's config error never shows its password (review D4; run
// prints it to stderr = the logs), even one holding a character that
// ended the first version's authority scan (#, /, a quote, a space), in a URL
// clipped before its '@', or in url.Parse's own detail (invalid port).
func TestBadURLErrorHidesPasswordAnySpelling(t *testing.T) {
	for _, url := range []string{
		"https://svc:s3cr#tpass@hooks.example.com/in",                                               // '#' unescaped: invalid port ":s3cr"
		"https://svc:s3cr/tpass@hooks.example.com/in",                                               // '/' unescaped
		"ftp://svc:s3cr'tpass@hooks.example.com/in",                                                 // valid, wrong scheme; '\'' stops the scan
		"ftp://a-rather-long-service-account-name:s3crtpass-and-more-and-more@hooks.example.com/in", // clipped before '@'
	} {
		errs := mustFail(t, lines(
			"feeds:",
			"  - name: app",
			"    path: /var/log/app.log",
			"processors:",
			"  - name: p",
			"    feed: app",
			"    type: webhook",
			"    url: \""+url+"\"",
		))
		if msg := errs.Error(); strings.Contains(msg, "s3cr") {
			t.Errorf("url %s: config error shows the password: %s", url, msg)
		}
	}
}
