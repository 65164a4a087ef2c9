package server

import (
	"fmt"
	"net/url"
	"unicode/utf8"
)

// Thread ids are the clients' names for their threads: they appear in URL
// paths (/api/threads/{id}), in the events_url the server builds, in AG-UI
// events and in the store's metadata. So that every id a client may create
// can also be reached, and no id changes meaning on the way (".." walking
// up a path, "?" or "#" ending it, a space a proxy re-encodes), an id is
// 1 to maxThreadIDLen characters of the alphabet below, starting with a
// letter or digit. UUIDs, "openwebui:<chat id>" and the server's own
// "chat-<uuid>" ids all fit.

// maxThreadIDLen is the longest thread id, in characters.
const maxThreadIDLen = 128

// threadIDRule says in words what a thread id may be; every refusal quotes it.
const threadIDRule = "1 to 128 characters: ASCII letters, digits, '-', '_', '.' and ':', starting with a letter or digit"

// validThreadID reports whether id follows threadIDRule.
func validThreadID(id string) bool {
	if len(id) == 0 || len(id) > maxThreadIDLen || !alnum(id[0]) {
		return false
	}
	for i := 1; i < len(id); i++ {
		if c := id[i]; !alnum(c) && c != '-' && c != '_' && c != '.' && c != ':' {
			return false
		}
	}
	return true
}

func alnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// checkThreadID is the 400 for an id that breaks the rule; param names
// where the id came from (the path's "thread", a body's "id" or
// "threadId", the X-OpenWebUI-Chat-Id header).
func checkThreadID(param, id string) error {
	if validThreadID(id) {
		return nil
	}
	return badRequest(param, "%s is not a valid thread id: a thread id is %s", quoteForClient(id), threadIDRule)
}

// quoteForClient quotes what a client sent for an error message, cut to a
// length that keeps the message readable.
func quoteForClient(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}

// threadPath is the escaped URL path of a thread's resource (parts are
// appended as further path segments, each escaped).
func threadPath(id string, parts ...string) string {
	p := "/api/threads/" + url.PathEscape(id)
	for _, s := range parts {
		p += "/" + url.PathEscape(s)
	}
	return p
}

// maxForwardedLen bounds the identities a trusted frontend forwards
// (X-OpenWebUI-User-Id, X-OpenWebUI-Chat-Id): the user id is stored in
// every turn's metadata, the chat id names a thread.
const maxForwardedLen = 256

// checkForwarded refuses a forwarded identity the store could not keep or
// that no frontend sends: longer than maxForwardedLen, not UTF-8, or with
// control characters. header names the header in the 400.
func checkForwarded(header, value string) error {
	if len(value) > maxForwardedLen {
		return badRequest(header, "is %d bytes; at most %d", len(value), maxForwardedLen)
	}
	if !utf8.ValidString(value) {
		return badRequest(header, "is not valid UTF-8")
	}
	for _, r := range value {
		if r < ' ' || r == 0x7f {
			return badRequest(header, "holds a control character")
		}
	}
	return nil
}
