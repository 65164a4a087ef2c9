package server

import (
	"net/url"
	"unicode/utf8"
)

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
