package apikey

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// MinLength is the shortest accepted key, in characters: shorter keys can
// be guessed.
const MinLength = 16

// Check reports why key cannot be an API key, or nil: it must have at least
// MinLength characters, all visible ASCII (no spaces or control characters,
// which do not survive an Authorization header) and no comma (the separator
// of CAPGRAPH_API_KEYS). The error says what is wrong without repeating the
// key.
func Check(key string) error {
	if len(key) < MinLength {
		return fmt.Errorf("is %d characters; use at least %d", len(key), MinLength)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c == ',':
			return fmt.Errorf("holds a comma at character %d; use visible ASCII characters other than ','", i+1)
		case c <= ' ' || c > '~':
			return fmt.Errorf("holds a space, a control or a non-ASCII character at byte %d; use visible ASCII characters other than ','", i+1)
		}
	}
	return nil
}

// Hash returns the hex SHA-256 digest of key, the form the server stores
// (server.Principal.KeySHA256).
func Hash(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:])
}
