package weather_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/examples/weather/weather"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 30, 0, time.UTC)

func start(t *testing.T, cfg weather.ServiceConfig) (*weather.Service, *weather.Client) {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return t0 }
	}
	s, err := weather.NewService(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, &weather.Client{BaseURL: s.URL()}
}

func rate(f float64) *float64 { return &f }

func TestServiceConfig(t *testing.T) {
	for _, cfg := range []weather.ServiceConfig{{FailureRate: rate(1.5)}, {FailureRate: rate(-0.1)}, {RetryAfter: -time.Second}} {
		if _, err := weather.NewService(cfg); !errors.Is(err, weather.ErrInvalidConfig) {
			t.Errorf("NewService(%+v) err = %v", cfg, err)
		}
	}
}

func TestReliableService(t *testing.T) {
	_, c := start(t, weather.ServiceConfig{FailureRate: rate(0)})
	w, err := c.Current(context.Background(), "paris")
	if err != nil {
		t.Fatal(err)
	}
	want := weather.Weather{City: "Paris", TemperatureC: 11.4, HumidityPct: 76, WindKPH: 12, Conditions: "cloudy", ObservedAt: "2026-11-21T12:00:00Z"}
	if w != want {
		t.Errorf("Current = %+v, want %+v", w, want)
	}
	if w.Summary() != "Weather in Paris: 11.4 °C, cloudy, humidity 76%, wind 12 km/h (observed 2026-11-21T12:00:00Z)" {
		t.Errorf("summary %q", w.Summary())
	}
	_, err = c.Current(context.Background(), "Atlantis")
	var he *weather.HTTPError
	if !errors.As(err, &he) || he.Status != http.StatusNotFound || !errors.Is(err, weather.ErrHTTP) || !strings.Contains(he.Message, "Atlantis") {
		t.Errorf("unknown city err = %v", err)
	}
	if _, err := c.Current(context.Background(), ""); !errors.As(err, &he) || he.Status != http.StatusBadRequest {
		t.Errorf("empty city err = %v", err)
	}
}

// The failures are a pure function of the seed and the request number.
func TestFailuresSeeded(t *testing.T) {
	run := func(seed int64) (pattern string, withRetryAfter int) {
		_, c := start(t, weather.ServiceConfig{Seed: seed, RetryAfter: 2 * time.Second})
		var b strings.Builder
		for range 400 {
			_, err := c.Current(context.Background(), "Berlin")
			var he *weather.HTTPError
			switch {
			case err == nil:
				b.WriteByte('.')
			case errors.As(err, &he) && he.Status == http.StatusServiceUnavailable:
				b.WriteByte('x')
				if he.RetryAfter == 2*time.Second {
					withRetryAfter++
				} else if he.RetryAfter != 0 {
					t.Fatalf("Retry-After %s", he.RetryAfter)
				}
			default:
				t.Fatalf("unexpected error %v", err)
			}
		}
		return b.String(), withRetryAfter
	}
	a, ra := run(7)
	b, _ := run(7)
	c, _ := run(8)
	if a != b {
		t.Error("same seed, different failure pattern")
	}
	if a == c {
		t.Error("different seeds, same failure pattern")
	}
	fails := strings.Count(a, "x")
	if fails < 90 || fails > 150 {
		t.Errorf("%d of 400 failed, want about 30%%", fails)
	}
	if ra != fails/2 {
		t.Errorf("%d of %d failures carried Retry-After, want every second one", ra, fails)
	}
}

func TestCityFromText(t *testing.T) {
	tests := []struct{ text, city string }{
		{"What is the weather in Paris?", "Paris"},
		{"how warm is it in san francisco right now", "San Francisco"},
		{"Weather for Reykjavik please", "Reykjavik"},
		{"is it raining", ""},
	}
	for _, tt := range tests {
		got, ok := weather.CityFromText(tt.text)
		if got != tt.city || ok != (tt.city != "") {
			t.Errorf("CityFromText(%q) = %q, %v", tt.text, got, ok)
		}
	}
}

func TestClassifyError(t *testing.T) {
	cw := weather.NewCapability(&weather.Client{})
	var opErr error = &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	tests := []struct {
		err        error
		sev        capabilities.Severity
		kind       string
		retryAfter time.Duration
	}{
		{&weather.HTTPError{Status: 503, RetryAfter: time.Second}, capabilities.Retriable, capabilities.KindServerError, time.Second},
		{&weather.HTTPError{Status: 502}, capabilities.Retriable, capabilities.KindServerError, 0},
		{&weather.HTTPError{Status: 429, RetryAfter: 3 * time.Second}, capabilities.Retriable, capabilities.KindRateLimit, 3 * time.Second},
		{&weather.HTTPError{Status: 404}, capabilities.Critical, capabilities.KindNotFound, 0},
		{&weather.HTTPError{Status: 401}, capabilities.Critical, capabilities.KindAuth, 0},
		{&weather.HTTPError{Status: 418}, capabilities.Critical, capabilities.KindUnknown, 0},
		{fmt.Errorf("weather: %w", opErr), capabilities.Retriable, capabilities.KindConnection, 0},
		{fmt.Errorf("%w: x", weather.ErrFormat), capabilities.Retriable, capabilities.KindFormat, 0},
		{weather.ErrNoCity, capabilities.Replanning, capabilities.KindInvalidInput, 0},
		{context.DeadlineExceeded, capabilities.SeverityUnset, "", 0},
		{errors.New("odd"), capabilities.Critical, capabilities.KindUnknown, 0},
	}
	for _, tt := range tests {
		c := cw.ClassifyError(tt.err, capabilities.ErrorContext{})
		if c.Severity != tt.sev || c.Kind != tt.kind || c.RetryAfter.D() != tt.retryAfter {
			t.Errorf("ClassifyError(%v) = %s/%s/%s, want %s/%s/%s", tt.err, c.Severity, c.Kind, c.RetryAfter, tt.sev, tt.kind, tt.retryAfter)
		}
	}
	if _, ok := cw.RetryPolicy().Next(capabilities.Attempt{Number: 1, Kind: capabilities.KindNotFound}, t0, nil); ok {
		t.Error("policy retries an unknown city")
	}
}

func TestUnreachableIsRetriable(t *testing.T) {
	s, c := start(t, weather.ServiceConfig{})
	_ = s.Close()
	cw := weather.NewCapability(c)
	_, err := cw.Execute(context.Background(), capabilities.Step{Task: "weather in Paris"})
	if cl := cw.ClassifyError(err, capabilities.ErrorContext{}); cl.Severity != capabilities.Retriable || cl.Kind != capabilities.KindConnection {
		t.Errorf("closed service: %v classified %+v", err, cl)
	}
}

// TestDemoRecoversByRetrying drives each demo question the way the agent
// does: execute, classify, ask the retry policy, repeat. With the default
// 30% failure rate some attempts fail and every question still succeeds.
func TestDemoRecoversByRetrying(t *testing.T) {
	s, c := start(t, weather.ServiceConfig{Seed: 3})
	cw := weather.NewCapability(c)
	reg := capabilities.NewRegistry()
	if err := reg.Register(cw); err != nil {
		t.Fatal(err)
	}
	retries := 0
	for _, q := range weather.Demo {
		step := capabilities.Step{Task: q.Question, Attempt: 1}
		for {
			out, err := cw.Execute(context.Background(), step)
			if err == nil {
				for _, f := range q.Facts {
					if !strings.Contains(out.Values[0].Summary, f) {
						t.Errorf("%q: fact %q missing from %q", q.Question, f, out.Values[0].Summary)
					}
				}
				break
			}
			cl := cw.ClassifyError(err, capabilities.ErrorContext{Attempt: step.Attempt})
			if cl.Severity != capabilities.Retriable {
				t.Fatalf("%q: %v classified %s", q.Question, err, cl.Severity)
			}
			if _, ok := cw.RetryPolicy().Next(capabilities.Attempt{Number: step.Attempt, Kind: cl.Kind, RetryAfter: cl.RetryAfter.D()}, t0, nil); !ok {
				t.Fatalf("%q: retries exhausted after %d attempts", q.Question, step.Attempt)
			}
			step.Attempt++
			retries++
		}
	}
	_, failures := s.Stats()
	if retries == 0 || retries != failures {
		t.Errorf("%d retries, %d failures; want some, and equal", retries, failures)
	}
}

func ExampleCityFromText() {
	city, _ := weather.CityFromText("How warm is it in san francisco right now?")
	fmt.Println(city)
	// Output: San Francisco
}

// Without the capability's own classifier, the default one still sees the
// status through HTTPStatus.
func TestDefaultClassifierSeesStatus(t *testing.T) {
	if c := capabilities.DefaultClassify(&weather.HTTPError{Status: 503}); c.Severity != capabilities.Retriable || c.Kind != capabilities.KindServerError {
		t.Errorf("DefaultClassify(503) = %s/%s", c.Severity, c.Kind)
	}
}
