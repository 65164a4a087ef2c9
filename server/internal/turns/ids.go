package turns

import (
	"fmt"
	"unicode/utf8"

	"github.com/capgraph/capgraph/server/internal/apierror"
)

// Thread ids are the clients' names for their threads: they appear in URL
// paths (/api/threads/{id}), in the events_url the server builds, in AG-UI
// events and in the store's metadata. So that every id a client may create
// can also be reached, and no id changes meaning on the way (".." walking
// up a path, "?" or "#" ending it, a space a proxy re-encodes), an id is
// 1 to MaxThreadIDLen characters of the alphabet below, starting with a
// letter or digit. UUIDs, "openwebui:<chat id>" and the server's own
// "chat-<uuid>" ids all fit.

// MaxThreadIDLen is the longest thread id, in characters.
const MaxThreadIDLen = 128

// ThreadIDRule says in words what a thread id may be; every refusal quotes it.
const ThreadIDRule = "1 to 128 characters: ASCII letters, digits, '-', '_', '.' and ':', starting with a letter or digit"

// ValidThreadID reports whether id follows ThreadIDRule.
func ValidThreadID(id string) bool {
	if len(id) == 0 || len(id) > MaxThreadIDLen || !alnum(id[0]) {
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

// CheckThreadID is the 400 for an id that breaks the rule; param names
// where the id came from (the path's "thread", a body's "id" or
// "threadId", the X-OpenWebUI-Chat-Id header).
func CheckThreadID(param, id string) error {
	if ValidThreadID(id) {
		return nil
	}
	return apierror.BadRequest(param, "%s is not a valid thread id: a thread id is %s", QuoteForClient(id), ThreadIDRule)
}

// QuoteForClient quotes what a client sent for an error message, cut to a
// length that keeps the message readable.
func QuoteForClient(s string) string {
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
