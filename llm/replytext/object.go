package replytext

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Errors of Object, matched with errors.Is.
var (
	// ErrNoObject: the reply's visible text holds no JSON object.
	ErrNoObject = errors.New("the reply contains no JSON object")
	// ErrOnlyReasoning: the reply is all reasoning, with no answer after it
	// (typically a block cut by the token limit).
	ErrOnlyReasoning = errors.New("the reply holds only reasoning (a <think> block) and no answer after it")
)

// maxFailures bounds how many opening braces that start no JSON value
// Object tries, so a reply full of stray braces costs little (a brace that
// starts an object is skipped past with it).
const maxFailures = 1024

// Object returns the JSON object of a reply that has the shape the caller
// expects, given as the object's keys. Reasoning is removed first (Visible);
// then every top-level JSON object in the text — in a code fence, after
// prose, or bare — is a candidate, and the one with the most expected keys
// wins, then the one with the fewest other keys, then the last (a model
// concludes after its drafts). When no candidate has an expected key, the
// first object is returned so the caller's strict check can name its wrong
// keys; when nothing decodes, the error says why.
func Object(reply string, keys ...string) (json.RawMessage, error) {
	text := Visible(reply)
	if text == "" && strings.TrimSpace(reply) != "" && HasReasoning(reply) {
		return nil, ErrOnlyReasoning
	}
	objs, firstErr := scan(text)
	if len(objs) == 0 {
		if firstErr != nil {
			return nil, fmt.Errorf("invalid JSON: %w", firstErr)
		}
		return nil, ErrNoObject
	}
	best, bestMatched, bestOther := -1, 0, 0
	for i, o := range objs {
		matched, other := score(o.keys, keys)
		if matched == 0 {
			continue
		}
		if best < 0 || matched > bestMatched || matched == bestMatched && other <= bestOther {
			best, bestMatched, bestOther = i, matched, other
		}
	}
	if best >= 0 {
		return objs[best].raw, nil
	}
	// A broken object before the first whole one is more likely the answer
	// (cut or malformed) than an object nested in it.
	if firstErr != nil && objs[0].brokenBefore {
		return nil, fmt.Errorf("invalid JSON: %w", firstErr)
	}
	return objs[0].raw, nil
}

// Objects returns every top-level JSON object of a reply's visible text, in
// order. A caller that must not guess (an approval) checks they agree.
func Objects(reply string) []json.RawMessage {
	objs, _ := scan(Visible(reply))
	out := make([]json.RawMessage, len(objs))
	for i, o := range objs {
		out[i] = o.raw
	}
	return out
}

type object struct {
	raw          json.RawMessage
	keys         []string
	brokenBefore bool // an opening brace before it did not decode
}

// scan finds the top-level JSON objects of text: at each '{' not inside an
// object already found, it decodes one value.
func scan(text string) (objs []object, firstErr error) {
	failed, unbalanced := 0, false
	for i := 0; i < len(text) && failed < maxFailures; {
		j := strings.IndexByte(text[i:], '{')
		if j < 0 {
			break
		}
		start := i + j
		// A balanced object that is valid JSON is what the decoder would
		// read; only the others need it (to say what is wrong). Once a
		// brace balances nowhere, the decoder alone goes on, so a reply
		// full of opening braces costs one scan more, not one per brace.
		if !unbalanced {
			if end := balancedEnd(text, start); end < 0 {
				unbalanced = true
			} else if raw := []byte(text[start:end]); json.Valid(raw) {
				objs = append(objs, object{raw: raw, keys: topKeys(raw), brokenBefore: firstErr != nil && len(objs) == 0})
				i = end
				continue
			}
		}
		dec := json.NewDecoder(strings.NewReader(text[start:]))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			failed++
			i = start + 1
			continue
		}
		o := object{raw: raw, keys: topKeys(raw), brokenBefore: firstErr != nil && len(objs) == 0}
		objs = append(objs, o)
		i = start + int(dec.InputOffset())
	}
	return objs, firstErr
}

// balancedEnd returns the end of the object starting at text[start] where
// its braces and brackets balance outside strings, or -1.
func balancedEnd(text string, start int) int {
	depth := 0
	for i := start; i < len(text); i++ {
		switch text[i] {
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		case '"':
			for i++; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		}
	}
	return -1
}

// topKeys returns the distinct keys of raw, a JSON object the decoder has
// validated, without decoding its values: a reply's object is scanned for
// its keys only, to pick the one the caller expects.
func topKeys(raw []byte) []string {
	var keys []string
	depth, wantKey := 0, false
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '{', '[':
			depth++
			wantKey = depth == 1 && c == '{'
		case '}', ']':
			depth--
		case ',':
			wantKey = depth == 1
		case '"':
			j, escaped := i+1, false
			for ; j < len(raw) && raw[j] != '"'; j++ {
				if raw[j] == '\\' {
					j++
					escaped = true
				}
			}
			if depth == 1 && wantKey {
				k := string(raw[i+1 : j])
				if escaped {
					_ = json.Unmarshal(raw[i:j+1], &k)
				}
				if !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
				wantKey = false
			}
			i = j
		}
	}
	return keys
}

// score counts the expected keys an object has and the other keys it has.
func score(have, want []string) (matched, other int) {
	for _, k := range have {
		found := false
		for _, w := range want {
			if k == w {
				found = true
				break
			}
		}
		if found {
			matched++
		} else {
			other++
		}
	}
	return matched, other
}
