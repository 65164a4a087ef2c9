package nodes

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// The walkers below read JSON a decoder has already validated (a reply's
// object from extractJSON): they only find where values end, without
// decoding or copying them. Anything they do not expect makes them report
// false, and the caller falls back to encoding/json and its error messages.

// members calls fn with each member of a JSON object: its key (without
// escapes) and its value's bytes. Duplicate keys are passed in order.
func members(raw []byte, fn func(key string, val []byte) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return true
	}
	for i < len(raw) {
		if raw[i] != '"' {
			return false
		}
		end := skipValue(raw, i)
		if end < 0 || bytes.IndexByte(raw[i:end], '\\') >= 0 {
			return false
		}
		k := raw[i+1 : end-1]
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		v := skipSpace(raw, i+1)
		end = skipValue(raw, v)
		if end < 0 || !fn(string(k), raw[v:end]) {
			return false
		}
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case '}':
			return true
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return false
		}
	}
	return false
}

// elements calls fn with each element of a JSON array.
func elements(raw []byte, fn func(val []byte) bool) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return true
	}
	for i < len(raw) {
		end := skipValue(raw, i)
		if end < 0 || !fn(raw[i:end]) {
			return false
		}
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ']':
			return true
		case ',':
			i = skipSpace(raw, i+1)
		default:
			return false
		}
	}
	return false
}

// jsonText decodes a JSON string value; a value of another type (null
// included) is not one.
func jsonText(val []byte) (string, bool) {
	if len(val) < 2 || val[0] != '"' {
		return "", false
	}
	inner := val[1 : len(val)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var s string
	err := json.Unmarshal(val, &s) // escapes, and invalid UTF-8 read as U+FFFD
	return s, err == nil
}

func isNull(val []byte) bool { return string(val) == "null" }

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the value starting at i, or -1.
func skipValue(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		for j := i + 1; j < len(raw); j++ {
			switch raw[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			case '"':
				end := skipValue(raw, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			}
		}
		return -1
	default: // a number, true, false or null
		j := i
		for j < len(raw) {
			switch raw[j] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return j
			}
			j++
		}
		return j
	}
}
