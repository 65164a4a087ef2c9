package reqbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// OpenAI's metadata limits, which every metadata object a client sends
// meets (the Responses API's, a native thread's change).
const (
	MaxMetadataKeys     = 16
	maxMetadataKeyLen   = 64
	maxMetadataValueLen = 512
)

// DecodeMetadata reads a metadata object within OpenAI's limits (16 keys
// of up to 64 bytes, values of up to 512, no NUL); null is none. The error
// says what is wrong, for the caller to name the field.
func DecodeMetadata(raw json.RawMessage) (map[string]string, error) {
	if IsNull(raw) {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errors.New("must be an object of string values")
	}
	if len(m) > MaxMetadataKeys {
		return nil, fmt.Errorf("%d keys exceed the limit of %d", len(m), MaxMetadataKeys)
	}
	for k, v := range m {
		if k == "" || len(k) > maxMetadataKeyLen || !utf8.ValidString(k) {
			return nil, fmt.Errorf("key %q: want 1 to %d bytes", k, maxMetadataKeyLen)
		}
		if len(v) > maxMetadataValueLen {
			return nil, fmt.Errorf("value of %q: %d bytes exceed the limit of %d", k, len(v), maxMetadataValueLen)
		}
		// The store keeps metadata as text, which holds no NUL.
		if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("key %q: keys and values must not contain NUL", k)
		}
	}
	return m, nil
}

// IsNull reports whether raw is JSON null.
func IsNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }
