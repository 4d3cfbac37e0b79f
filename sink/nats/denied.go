package nats

import (
	"errors"
	"fmt"
	"regexp"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Publish permission violations (DESIGN §11: "an authorization error for
// that record" follows onFailure).
//
// A server that denies the sink's user publishing to a subject drops each
// such message and answers, asynchronously and outside any reply, with
// -ERR 'Permissions Violation for Publish to "<subject>"' (nats-server
// client.go pubPermissionViolation); no ack ever comes. The connection's
// ErrorHandler (asyncErr) notes the subject and wakes the waiting call,
// which returns a plain error naming the refusal (so the line follows
// onFailure) instead of holding on "no ack". A denied reply subject (the
// sink's ack inbox: "Publish with Reply of") is not about a line: it
// holds with the reason. Every other asynchronous error is logged through
// the sink's logger (secrets masked); nats.go then prints nothing itself.

var (
	deniedPubRE   = regexp.MustCompile(`Publish to "([^"]+)"`)
	deniedReplyRE = regexp.MustCompile(`Publish with Reply of "([^"]+)"`)
)

// denials are the permission violations the server reported.
type denials struct {
	mu      sync.Mutex
	n       uint64            // +1 per violation
	subject map[string]uint64 // denied subject: n at its last violation
	msg     map[string]string // denied subject: the server's text (masked)
	reply   uint64            // n at the last reply-subject violation (0: none)
	replyM  string
	logged  time.Time
}

// asyncErr is the connection's ErrorHandler.
func (s *Sink) asyncErr(_ *nats.Conn, sub *nats.Subscription, err error) {
	if err == nil {
		return
	}
	msg := s.secret(err).Error()
	if !errors.Is(err, nats.ErrPermissionViolation) {
		if sub != nil {
			s.log.Warn("nats connection error", "subject", sub.Subject, "error", msg)
		} else {
			s.log.Warn("nats connection error", "error", msg)
		}
		return
	}
	d := &s.denied
	d.mu.Lock()
	logIt := time.Since(d.logged) > 10*time.Second
	if logIt {
		d.logged = time.Now()
	}
	if m := deniedPubRE.FindStringSubmatch(err.Error()); m != nil {
		d.n++
		if d.subject == nil || len(d.subject) > 1000 {
			d.subject, d.msg = map[string]uint64{}, map[string]string{}
		}
		d.subject[m[1]], d.msg[m[1]] = d.n, msg
	} else if deniedReplyRE.MatchString(err.Error()) {
		d.n++
		d.reply, d.replyM = d.n, msg
	}
	d.mu.Unlock()
	s.kicked()
	if logIt {
		s.log.Warn("nats server refused a publish (permissions; repeats of this message are not logged for 10 s)", "error", msg)
	}
}

// denyMark is the violation count now: a call reports only violations
// after it.
func (s *Sink) denyMark() uint64 {
	s.denied.mu.Lock()
	defer s.denied.mu.Unlock()
	return s.denied.n
}

// deniedSince returns the error for a permission violation on subj (plain:
// the lines follow onFailure) or on the ack inbox (held) reported after
// mark, or nil.
func (s *Sink) deniedSince(mark uint64, subj string) error {
	d := &s.denied
	d.mu.Lock()
	defer d.mu.Unlock()
	if n, ok := d.subject[subj]; ok && n > mark {
		return fmt.Errorf("nats server %s refused publishing to subject %s (%s): the user lacks publish permission for it, an authorization error for these lines",
			s.shown, subj, d.msg[subj])
	}
	if d.reply > mark {
		return s.unavailable(fmt.Errorf("nats server %s refused the sink's reply subject (%s): the user needs publish permission with replies to _INBOX.> (or the inbox prefix) to receive acks",
			s.shown, d.replyM))
	}
	return nil
}
