package sqlite

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
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

func jsonArg[T any](v []T) (any, error) {
	if len(v) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func mapArg(m map[string]string) (any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func scanNext(s *string) ([]string, error) {
	if s == nil {
		return nil, nil
	}
	var out []string
	if err := json.Unmarshal([]byte(*s), &out); err != nil {
		return nil, fmt.Errorf("sqlite: corrupt next column: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func scanMetadata(s *string) (map[string]string, error) {
	if s == nil {
		return nil, nil
	}
	var out map[string]string
	if err := json.Unmarshal([]byte(*s), &out); err != nil {
		return nil, fmt.Errorf("sqlite: corrupt metadata column: %w", err)
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
