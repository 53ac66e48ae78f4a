package store

import (
	"strconv"
	"strings"
	"time"
)

// The event log's ids are the one event-id format of the gateway: the SSE
// ids clients send back in Last-Event-ID, and the positions streams resume
// from. Only this file parses or orders them; callers compare ids with
// EventIDAfter and check a client's with CheckResumeID.

// eventID is a parsed event id "<ms>-<seq>", the format of Redis stream
// entry ids, which the Memory store issues too.
type eventID struct{ ms, seq uint64 }

// parseEventID accepts exactly ^\d+-\d+$ with both parts fitting in 64
// bits (the range Redis accepts); anything else is ErrBadEventID.
func parseEventID(s string) (eventID, error) {
	msText, seqText, ok := strings.Cut(s, "-")
	if !ok || !allDigits(msText) || !allDigits(seqText) {
		return eventID{}, ErrBadEventID
	}
	ms, err1 := strconv.ParseUint(msText, 10, 64)
	seq, err2 := strconv.ParseUint(seqText, 10, 64)
	if err1 != nil || err2 != nil {
		return eventID{}, ErrBadEventID
	}
	return eventID{ms, seq}, nil
}

func (e eventID) String() string {
	return strconv.FormatUint(e.ms, 10) + "-" + strconv.FormatUint(e.seq, 10)
}

func (e eventID) after(o eventID) bool {
	return e.ms > o.ms || (e.ms == o.ms && e.seq > o.seq)
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// EventIDAfter reports whether event id a comes after event id b in log
// order: ids order every stream's events of a session together, so a
// stream that replays the log and then follows it live skips what it has
// already sent. An id that is not of the log's form comes after nothing,
// and every id of the log's form comes after it.
func EventIDAfter(a, b string) bool {
	x, err := parseEventID(a)
	if err != nil {
		return false
	}
	y, err := parseEventID(b)
	return err != nil || x.after(y)
}

// resumeSkew is how far past this process's clock an event id may lie and
// still be one the log issued: Redis stamps ids with its own clock.
const resumeSkew = time.Minute

// checkResumeID reports ErrBadEventID for an id the log never issued: one
// that is malformed, after the newest retained event, or, when the log
// holds nothing (it may have expired), stamped in the future.
func checkResumeID(id, newest string, now time.Time) error {
	e, err := parseEventID(id)
	if err != nil {
		return err
	}
	if newest != "" && newest != "0-0" {
		n, err := parseEventID(newest)
		if err == nil && e.after(n) {
			return ErrBadEventID
		}
		return nil
	}
	if e.ms > uint64(max(now.Add(resumeSkew).UnixMilli(), 0)) {
		return ErrBadEventID
	}
	return nil
}

// CheckResumeID reports ErrBadEventID for a Last-Event-ID the log never
// issued, given the log's newest id as LatestEventID returns it ("0-0" for
// an empty log).
func CheckResumeID(id, newest string) error { return checkResumeID(id, newest, time.Now()) }
