package replytext

import (
	"strings"
	"unicode"
)

// reasoningTags are the blocks models wrap their thinking in, opening tag
// first. Tags are matched without regard to case.
var reasoningTags = [][2]string{
	{"<think>", "</think>"},
	{"<thinking>", "</thinking>"},
	{"<reasoning>", "</reasoning>"},
}

// maxCloseLen and maxOpenLen are the lengths of the longest closing and
// opening tags.
var maxCloseLen, maxOpenLen = func() (int, int) {
	c, o := 0, 0
	for _, t := range reasoningTags {
		c, o = max(c, len(t[1])), max(o, len(t[0]))
	}
	return c, o
}()

// Visible returns what a reply says to its reader: the reply without its
// reasoning, trimmed. Removed are every complete reasoning block, an
// unterminated block to the end (its close was cut by the token limit), and
// everything up to a closing tag that has no opening one (the chat template
// opened the block in the prompt).
func Visible(reply string) string {
	var f Filter
	out := f.Write(reply) + f.Flush()
	// Any closing tag left has no opening one: what precedes it is reasoning.
	if i, n := firstClose(out); i >= 0 {
		out = out[i+n:]
	}
	return strings.TrimSpace(out)
}

// OpenedInPrompt reports whether the reply's first reasoning tag is a
// closing one: the chat template opened the block in the prompt, so the
// reply starts with bare reasoning.
func OpenedInPrompt(reply string) bool {
	first, isClose := -1, false
	for _, t := range reasoningTags {
		if i := indexFold(reply, t[0]); i >= 0 && (first < 0 || i < first) {
			first, isClose = i, false
		}
		if i := indexFold(reply, t[1]); i >= 0 && (first < 0 || i < first) {
			first, isClose = i, true
		}
	}
	return isClose
}

// HasReasoning reports whether reply contains a reasoning block or tag.
func HasReasoning(reply string) bool {
	for _, t := range reasoningTags {
		if indexFold(reply, t[0]) >= 0 || indexFold(reply, t[1]) >= 0 {
			return true
		}
	}
	return false
}

func firstClose(s string) (at, length int) {
	at = -1
	for _, t := range reasoningTags {
		if i := indexFold(s, t[1]); i >= 0 && (at < 0 || i < at) {
			at, length = i, len(t[1])
		}
	}
	return at, length
}

// Filter removes reasoning blocks from a reply as it streams. Write returns
// the part of a chunk that can be shown now; text that may open a reasoning
// tag is held back until the next chunk decides it, and text inside a block
// is dropped. Leading blank space is dropped too, so a reply starting with
// "<think>…</think>\n\n" shows from its first word. Flush returns what is
// held back at the end. A Filter is not safe for concurrent use; the zero
// value is ready.
//
// A closing tag without an opening one is only recognisable once the whole
// reply is known: Visible removes the reasoning before it, a Filter cannot
// (the text before it was shown already). Compare what was streamed with
// Visible of the whole reply to detect it; for a model known to reply that
// way, StartInReasoning makes the Filter treat the reply's start as
// reasoning up to the first closing tag.
type Filter struct {
	held    string // text not yet decided
	closing string // the closing tag awaited inside a block; "" outside
	anyTag  bool   // inside a block opened in the prompt: any closing tag ends it
	started bool   // visible text has been returned
}

// StartInReasoning makes the reply's start count as reasoning until the
// first closing tag (a chat template that opens the block in the prompt).
// A reply without any closing tag then shows nothing until Flush drops it:
// the caller shows Visible of the whole reply instead. Call it before Write.
func (f *Filter) StartInReasoning() {
	f.closing, f.anyTag = reasoningTags[0][1], true
}

// Write takes the next chunk and returns the text to show now.
func (f *Filter) Write(chunk string) string {
	f.held += chunk
	var out strings.Builder
	for f.held != "" {
		if f.closing != "" {
			i, n := indexFold(f.held, f.closing), len(f.closing)
			if f.anyTag {
				i, n = firstClose(f.held)
			}
			if i < 0 {
				// Keep what could be the start of the closing tag.
				if keep := maxCloseLen - 1; len(f.held) > keep {
					f.held = f.held[len(f.held)-keep:]
				}
				break
			}
			f.held = f.held[i+n:]
			f.closing, f.anyTag = "", false
			continue
		}
		i := strings.IndexByte(f.held, '<')
		if i < 0 {
			f.emit(&out, f.held)
			f.held = ""
			break
		}
		f.emit(&out, f.held[:i])
		rest := f.held[i:]
		if open, partial := openingTag(rest); open != "" {
			f.closing = open
			f.held = rest[len(tagFor(open)[0]):]
			continue
		} else if partial {
			f.held = rest
			break
		}
		f.emit(&out, "<")
		f.held = rest[1:]
	}
	return out.String()
}

// Flush returns the text held back at the end of the reply. An unterminated
// reasoning block is dropped.
func (f *Filter) Flush() string {
	var out strings.Builder
	if f.closing == "" {
		f.emit(&out, f.held)
	}
	f.held = ""
	return out.String()
}

func (f *Filter) emit(out *strings.Builder, s string) {
	if !f.started {
		s = strings.TrimLeftFunc(s, unicode.IsSpace)
		if s == "" {
			return
		}
		f.started = true
	}
	out.WriteString(s)
}

// openingTag reports whether s starts with a reasoning opening tag (its
// closing tag is returned) or with a prefix of one that more text may
// complete.
func openingTag(s string) (closing string, partial bool) {
	// Only the start can hold a tag: lowering the rest of the reply at
	// every '<' would cost the square of its length.
	l := asciiLower(s[:min(len(s), maxOpenLen)])
	for _, t := range reasoningTags {
		if strings.HasPrefix(l, t[0]) {
			return t[1], false
		}
		if len(l) < len(t[0]) && strings.HasPrefix(t[0], l) {
			partial = true
		}
	}
	return "", partial
}

func tagFor(closing string) [2]string {
	for _, t := range reasoningTags {
		if t[1] == closing {
			return t
		}
	}
	return [2]string{}
}

// indexFold is strings.Index(asciiLower(s), tag) for a lowercase tag that
// starts with '<' (every reasoning tag), without copying s.
func indexFold(s, tag string) int {
	for i := 0; ; i++ {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return -1
		}
		i += j
		if len(s)-i < len(tag) {
			return -1
		}
		if equalFoldASCII(s[i:i+len(tag)], tag) {
			return i
		}
	}
}

// equalFoldASCII reports whether s, its ASCII letters lowered, is lower.
func equalFoldASCII(s, lower string) bool {
	for k := range len(s) {
		c := s[k]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[k] {
			return false
		}
	}
	return true
}

// asciiLower lowercases ASCII letters only, so byte offsets stay those of s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
