package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/capgraph/capgraph/cli"
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

// The example's command line: each flow can be tried from a chat — a 503
// the retry absorbs, a city the service does not know (no retry; the
// report lists the known cities), a question without a city.
func TestWeatherAppFlowsInChat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	var out, errb bytes.Buffer
	in := strings.Join(questions, "\n") + "\n/exit\n"
	code := App().Run(ctx, cli.Env{Args: []string{"--store", "memory", "chat"}, Stdin: strings.NewReader(in), Stdout: &out, Stderr: &errb,
		Dir: dir, Getenv: func(k string) string { return map[string]string{"HOME": dir}[k] }})
	if code != cli.ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{
		"weather chat — thread", "/help for commands and demo questions",
		"Weather in Paris: 11.4 °C, cloudy", "current_weather succeeded after 2 attempts (recovered from a transient failure)",
		"Weather in London: 9.8 °C", "Weather in San Francisco: 14.9 °C",
		"The weather service has no data for that city", "Known cities: Berlin, Chicago",
		"The question does not say which city", "max_planning_attempts",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("chat lacks %q:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "Your request could not be completed"); n != 2 {
		t.Errorf("%d error reports, want 2 (unknown city, no city)", n)
	}
}
