package sqlite

import (
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint/internal/sqlrow"
)

// Column encodings. Empty collections and zero values are stored as NULL and
// come back as nil / zero, which is what the conformance suite pins down.

func idArg(id uuid.UUID) any {
	if id == uuid.Nil {
		return nil
	}
	return id[:]
}

func scanID(b []byte) (uuid.UUID, error) {
	if len(b) == 0 {
		return uuid.Nil, nil
	}
	id, err := uuid.FromBytes(b)
	if err != nil {
		return uuid.Nil, fmt.Errorf("sqlite: corrupt id %x: %w", b, err)
	}
	return id, nil
}

func blobArg(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// timeArg stores microseconds since the Unix epoch; the zero time is NULL.
func timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func scanTime(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return time.UnixMicro(*v).UTC()
}

// scanNext and scanMetadata decode the JSON columns (sqlrow), naming the store
// in their errors.
func scanNext(b []byte) ([]string, error) {
	out, err := sqlrow.Strings(b, "next")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return out, nil
}

func scanMetadata(b []byte) (map[string]string, error) {
	out, err := sqlrow.Metadata(b)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return out, nil
}
