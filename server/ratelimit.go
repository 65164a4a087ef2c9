package server

import (
	"context"
	"math"
	"sync"
	"time"
)

// Requests per minute are limited per principal by a token bucket: the
// bucket holds up to a minute's worth of requests (a client may spend them
// at once), and refills continuously at RequestsPerMinute/60 per second. A
// request finding it empty gets 429 with the seconds until the next token
// in Retry-After. Forwarded end users of a trusted frontend share the
// frontend's bucket: identity for limits is the key.

// With replicas on PostgreSQL the buckets are rows of the database
// (runstore.RateCounter), on its clock, so the limit holds across the
// replicas; when the database does not answer, this process's bucket
// counts meanwhile.

// allowRequest takes a token of c's bucket, or says how long until one is
// there.
func (s *Server) allowRequest(ctx context.Context, c caller) (bool, time.Duration) {
	if s.limiter == nil {
		return true, 0
	}
	if s.rates != nil {
		ok, wait, err := s.rates.TakeToken(ctx, "requests:"+digestHex(c.Principal.Tenant, c.Principal.Name), s.cfg.RequestsPerMinute)
		if err == nil {
			return ok, wait
		}
		s.cfg.Logger.Warn("counting a request in the database failed; counted in this replica", "error", err)
	}
	return s.limiter.allow(c.key())
}

type bucket struct {
	tokens float64
	at     time.Time
}

// rateLimiter holds one bucket per principal.
type rateLimiter struct {
	perMinute float64
	now       func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
}

func newRateLimiter(perMinute int, now func() time.Time) *rateLimiter {
	if perMinute <= 0 {
		return nil
	}
	return &rateLimiter{perMinute: float64(perMinute), now: now, buckets: map[string]*bucket{}}
}

// allow takes a token from key's bucket, or says how long until one is
// there. A nil limiter allows everything.
func (l *rateLimiter) allow(key string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		b = &bucket{tokens: l.perMinute, at: now}
		l.buckets[key] = b
	}
	if el := now.Sub(b.at); el > 0 {
		b.tokens = math.Min(l.perMinute, b.tokens+el.Minutes()*l.perMinute)
		b.at = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.perMinute * float64(time.Minute))
	return false, wait
}
