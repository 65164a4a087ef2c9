package weather

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// DefaultFailureRate is the share of requests the service fails with 503.
const DefaultFailureRate = 0.3

// ErrInvalidConfig is the kind of a NewService error.
var ErrInvalidConfig = errors.New("weather: invalid service config")

// ServiceConfig configures the mock service.
type ServiceConfig struct {
	// Seed decides which requests fail: the same seed fails the same
	// request numbers, so tests are deterministic.
	Seed int64
	// FailureRate in [0, 1]: the share of requests answered 503. A nil
	// pointer means DefaultFailureRate; point at 0 for a reliable service.
	FailureRate *float64
	// RetryAfter is sent with every second 503 (the others send none, as
	// real services do); default 1s.
	RetryAfter time.Duration
	// Now stamps observations (default time.Now).
	Now func() time.Time
	// Addr to listen on (default 127.0.0.1:0, a free loopback port).
	Addr string
}

// Service is the running mock weather service.
type Service struct {
	cfg  ServiceConfig
	rate float64
	ln   net.Listener
	srv  *http.Server
	done chan struct{}

	mu       sync.Mutex
	requests int
	failures int
}

// NewService starts the service on a loopback port. Close stops it.
func NewService(cfg ServiceConfig) (*Service, error) {
	rate := DefaultFailureRate
	if cfg.FailureRate != nil {
		rate = *cfg.FailureRate
	}
	if rate < 0 || rate > 1 {
		return nil, fmt.Errorf("%w: failure rate %g is not within [0, 1]", ErrInvalidConfig, rate)
	}
	if cfg.RetryAfter < 0 {
		return nil, fmt.Errorf("%w: negative retry-after", ErrInvalidConfig)
	}
	if cfg.RetryAfter == 0 {
		cfg.RetryAfter = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("weather: listen: %w", err)
	}
	s := &Service{cfg: cfg, rate: rate, ln: ln, done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/current", s.current)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	return s, nil
}

// URL is the service's base URL, e.g. http://127.0.0.1:41234.
func (s *Service) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the service and waits for it.
func (s *Service) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// Stats returns how many requests were served and how many failed with 503.
func (s *Service) Stats() (requests, failures int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.failures
}

// fails decides request n's fate from the seed alone.
func (s *Service) fails(n int) bool {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d", s.cfg.Seed, n)
	return float64(h.Sum64()%10000)/10000 < s.rate
}

func (s *Service) current(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	n := s.requests
	fail := s.fails(n)
	if fail {
		s.failures++
	}
	failures := s.failures
	s.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	if fail {
		if failures%2 == 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((s.cfg.RetryAfter+time.Second-1)/time.Second)))
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "service temporarily overloaded"})
		return
	}
	city := r.URL.Query().Get("city")
	if city == "" {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "missing city parameter"})
		return
	}
	wx, ok := lookup(city)
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "unknown city " + strconv.Quote(city)})
		return
	}
	wx.ObservedAt = s.cfg.Now().UTC().Truncate(time.Minute).Format(time.RFC3339)
	_ = json.NewEncoder(w).Encode(wx)
}
