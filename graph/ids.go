package graph

import "github.com/google/uuid"

// newID returns a UUIDv7, so checkpoint ids sort by creation time.
func newID() uuid.UUID {
	if id, err := uuid.NewV7(); err == nil {
		return id
	}
	// The random source failed; a v4 id is still unique, only not time-ordered.
	return uuid.New()
}
