package capabilities

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Jitter chooses how a retry delay is randomised (AWS "Exponential Backoff
// and Jitter").
type Jitter string

const (
	JitterFull  Jitter = "full"  // uniform in [0, d]: the default; spreads retries best
	JitterEqual Jitter = "equal" // d/2 + uniform in [0, d/2]
	JitterNone  Jitter = "none"  // exactly d
)

// The built-in retry policy (Temporal's field meanings, AWS full jitter):
// RetryPolicy{}.WithDefaults().
const (
	defaultMaxAttempts        = 3
	defaultInitialInterval    = time.Second
	defaultBackoffCoefficient = 2.0
	defaultMaxInterval        = 30 * time.Second
)

// RetryPolicy governs how a RETRIABLE failure is retried. It is plain data
// with plain time.Duration fields; in checkpoints and configs it is JSON
// (or YAML) with the intervals as duration strings ("1.5s"), and a number
// of seconds is read too. Every zero field means "not set here": it is
// filled from the next policy down (see ResolveRetryPolicy), then from the
// built-in defaults (see WithDefaults). So the zero RetryPolicy is "no
// policy of its own", and "never retry" is said with MaxAttempts 1.
type RetryPolicy struct {
	// MaxAttempts counts the first try: 1 means never retry. Default 3.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// InitialInterval is the delay before the first retry, before jitter. Default 1s.
	InitialInterval time.Duration `json:"initial_interval,omitempty"`
	// BackoffCoefficient multiplies the delay after each retry; at least 1. Default 2.
	BackoffCoefficient float64 `json:"backoff_coefficient,omitempty"`
	// MaxInterval caps the delay before jitter. Default 30s.
	MaxInterval time.Duration `json:"max_interval,omitempty"`
	// Jitter: "full" (default), "equal" or "none".
	Jitter Jitter `json:"jitter,omitempty"`
	// MaxElapsed stops retrying once this long has passed since the first
	// attempt (counting the next delay). 0 means no limit.
	MaxElapsed time.Duration `json:"max_elapsed,omitempty"`
	// NonRetryable lists error kinds never retried, whatever the severity.
	NonRetryable []string `json:"non_retryable,omitempty"`
}

// retryPolicyJSON is RetryPolicy's encoded form: the intervals as duration
// strings, as checkpoints and configs have always held them.
type retryPolicyJSON struct {
	MaxAttempts        int      `json:"max_attempts,omitempty"`
	InitialInterval    Duration `json:"initial_interval,omitempty"`
	BackoffCoefficient float64  `json:"backoff_coefficient,omitempty"`
	MaxInterval        Duration `json:"max_interval,omitempty"`
	Jitter             Jitter   `json:"jitter,omitempty"`
	MaxElapsed         Duration `json:"max_elapsed,omitempty"`
	NonRetryable       []string `json:"non_retryable,omitempty"`
}

// MarshalJSON writes the intervals as duration strings ("1.5s").
func (p RetryPolicy) MarshalJSON() ([]byte, error) {
	return json.Marshal(retryPolicyJSON{p.MaxAttempts, Duration(p.InitialInterval), p.BackoffCoefficient,
		Duration(p.MaxInterval), p.Jitter, Duration(p.MaxElapsed), p.NonRetryable})
}

// UnmarshalJSON reads the intervals as duration strings or numbers of seconds.
func (p *RetryPolicy) UnmarshalJSON(b []byte) error {
	var j retryPolicyJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*p = RetryPolicy{j.MaxAttempts, time.Duration(j.InitialInterval), j.BackoffCoefficient,
		time.Duration(j.MaxInterval), j.Jitter, time.Duration(j.MaxElapsed), j.NonRetryable}
	return nil
}

// IsZero reports whether p sets nothing: no policy of its own.
func (p RetryPolicy) IsZero() bool {
	return p.MaxAttempts == 0 && p.InitialInterval == 0 && p.BackoffCoefficient == 0 && p.MaxInterval == 0 &&
		p.Jitter == "" && p.MaxElapsed == 0 && p.NonRetryable == nil
}

// WithDefaults returns p with every zero field set to its default.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = defaultMaxAttempts
	}
	if p.InitialInterval == 0 {
		p.InitialInterval = defaultInitialInterval
	}
	if p.BackoffCoefficient == 0 {
		p.BackoffCoefficient = defaultBackoffCoefficient
	}
	if p.MaxInterval == 0 {
		p.MaxInterval = defaultMaxInterval
		if p.InitialInterval > p.MaxInterval {
			p.MaxInterval = p.InitialInterval
		}
	}
	if p.Jitter == "" {
		p.Jitter = JitterFull
	}
	return p
}

// Validate reports impossible values, naming the field.
func (p RetryPolicy) Validate() error {
	var errs []error
	if p.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("max_attempts must be at least 1, got %d", p.MaxAttempts))
	}
	if p.BackoffCoefficient != 0 && p.BackoffCoefficient < 1 {
		errs = append(errs, fmt.Errorf("backoff_coefficient must be at least 1, got %g", p.BackoffCoefficient))
	}
	if p.InitialInterval < 0 || p.MaxInterval < 0 || p.MaxElapsed < 0 {
		errs = append(errs, errors.New("intervals must not be negative"))
	}
	if p.MaxInterval != 0 && p.InitialInterval > p.MaxInterval {
		errs = append(errs, fmt.Errorf("initial_interval %s is larger than max_interval %s", p.InitialInterval, p.MaxInterval))
	}
	switch p.Jitter {
	case "", JitterFull, JitterEqual, JitterNone:
	default:
		errs = append(errs, fmt.Errorf("jitter must be full, equal or none, got %q", p.Jitter))
	}
	return errors.Join(errs...)
}

// Attempt describes the failure a retry decision is about.
type Attempt struct {
	// Number of attempts made so far, including the one that just failed (>= 1).
	Number int
	// FirstAt is when the first attempt started (for MaxElapsed).
	FirstAt time.Time
	// Kind is the failure's error kind (for NonRetryable).
	Kind string
	// RetryAfter, when positive, replaces the computed delay (before the
	// MaxElapsed check); a server knows best when it will be ready.
	RetryAfter time.Duration
}

// Next decides whether to retry after a failed attempt and how long to wait.
// It is a pure function: the same inputs and random source give the same
// answer, so a decision can be recomputed and tested exactly.
func (p RetryPolicy) Next(a Attempt, now time.Time, r *rand.Rand) (delay time.Duration, ok bool) {
	p = p.WithDefaults()
	if a.Number < 1 {
		a.Number = 1
	}
	if a.Number >= p.MaxAttempts || slices.Contains(p.NonRetryable, a.Kind) {
		return 0, false
	}
	if a.RetryAfter > 0 {
		delay = a.RetryAfter
	} else {
		d := float64(p.InitialInterval) * math.Pow(p.BackoffCoefficient, float64(a.Number-1))
		if d > float64(p.MaxInterval) || math.IsInf(d, 0) || math.IsNaN(d) {
			d = float64(p.MaxInterval)
		}
		delay = time.Duration(d)
		switch p.Jitter {
		case JitterFull:
			delay = randDuration(r, delay)
		case JitterEqual:
			delay = delay/2 + randDuration(r, delay-delay/2)
		}
	}
	if p.MaxElapsed > 0 && !a.FirstAt.IsZero() && now.Add(delay).Sub(a.FirstAt) > p.MaxElapsed {
		return 0, false
	}
	return delay, true
}

// randDuration returns a uniform duration in [0, d].
func randDuration(r *rand.Rand, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	if r == nil {
		return time.Duration(rand.Int64N(int64(d) + 1))
	}
	return time.Duration(r.Int64N(int64(d) + 1))
}
