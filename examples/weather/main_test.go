package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/examples/weather/weather"
)

// The example answers every demo question with its facts, although the
// service fails some requests with 503: the retries recover.
func TestWeatherExampleRecoversFrom503s(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, seed); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	s := out.String()
	for _, d := range weather.Demo {
		i := strings.Index(s, "> "+d.Question)
		if i < 0 {
			t.Fatalf("question %q not asked:\n%s", d.Question, s)
		}
		section := s[i:]
		if j := strings.Index(section[2:], "\n> "); j >= 0 {
			section = section[:j+2]
		}
		for _, f := range d.Facts {
			if !strings.Contains(section, f) {
				t.Errorf("answer to %q lacks %q:\n%s", d.Question, f, section)
			}
		}
	}
	for _, w := range []string{"failed: weather service: HTTP 503", "retry: step 1 (current_weather) attempt 1 of 5 failed", "(recovered after 1 retry)"} {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
	m := regexp.MustCompile(`answered (\d+) requests, (\d+) of them with 503`).FindStringSubmatch(s)
	if m == nil || m[2] == "0" {
		t.Errorf("no 503 was served: %v", m)
	}
}
