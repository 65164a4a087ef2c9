package capabilities

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration that encodes as a Go duration string ("1.5s")
// and also decodes from a number of seconds.
type Duration time.Duration

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON encodes as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts "250ms", "1.5s" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch x := v.(type) {
	case float64:
		*d = Duration(x * float64(time.Second))
	case string:
		p, err := time.ParseDuration(x)
		if err != nil {
			return fmt.Errorf("invalid duration %q (want e.g. \"500ms\", \"2s\", \"1m\")", x)
		}
		*d = Duration(p)
	default:
		return fmt.Errorf("invalid duration %s (want a string such as \"2s\" or a number of seconds)", b)
	}
	if *d < 0 {
		return fmt.Errorf("invalid duration %s: negative", b)
	}
	return nil
}
