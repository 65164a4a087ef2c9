package weather

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// WeatherDataType is the context type current_weather provides.
const WeatherDataType = "WEATHER_DATA"

// ErrNoCity: neither the parameters nor the task name a city.
var ErrNoCity = errors.New("no city given")

// CurrentWeather is the current_weather capability. Parameter: city;
// otherwise the city is found in the step's objective or the task.
type CurrentWeather struct{ client *Client }

// NewCapability returns current_weather using client.
func NewCapability(client *Client) *CurrentWeather { return &CurrentWeather{client: client} }

func (*CurrentWeather) Name() string { return "current_weather" }
func (*CurrentWeather) Description() string {
	return "Get the current weather in a city now: temperature (how warm or cold it is), conditions (rain, sun, clouds, fog), humidity and wind."
}
func (*CurrentWeather) Provides() []string                   { return []string{WeatherDataType} }
func (*CurrentWeather) Requires() []capabilities.Requirement { return nil }

var cityAfterPreposition = regexp.MustCompile(`\b(?:in|for|at)\s+([A-Z][\p{L}]+(?:\s+[A-Z][\p{L}]+)*)`)

// CityFromText finds a city in a question: a known city first (case
// insensitive), else capitalised words after "in", "for" or "at".
func CityFromText(text string) (string, bool) {
	lower := strings.ToLower(text)
	best := ""
	for _, c := range Cities() {
		// The longest known name wins ("San Francisco" over a shorter match).
		if strings.Contains(lower, strings.ToLower(c)) && len(c) > len(best) {
			best = c
		}
	}
	if best != "" {
		return best, true
	}
	if m := cityAfterPreposition.FindStringSubmatch(text); m != nil {
		return m[1], true
	}
	return "", false
}

// Execute asks the service once; retries are the agent's job, governed by
// RetryPolicy, so a failure is returned as it is for ClassifyError.
func (c *CurrentWeather) Execute(ctx context.Context, step capabilities.Step) (capabilities.Output, error) {
	city, err := capabilities.Param(step, "city", "")
	if err != nil {
		return capabilities.Output{}, fmt.Errorf("%w: %w", ErrNoCity, err)
	}
	if city == "" {
		for _, t := range []string{step.TaskObjective, step.Task} {
			if found, ok := CityFromText(t); ok {
				city = found
				break
			}
		}
	}
	if city == "" {
		return capabilities.Output{}, ErrNoCity
	}
	w, err := c.client.Current(ctx, city)
	if err != nil {
		return capabilities.Output{}, err
	}
	return capabilities.Result(WeatherDataType, w, w.Summary()), nil
}

// RetryPolicy: the service is flaky (503s) but recovers quickly, so try up
// to five times with short backoff; never retry what cannot change.
func (*CurrentWeather) RetryPolicy() capabilities.RetryPolicy {
	return capabilities.RetryPolicy{MaxAttempts: 5, InitialInterval: 200 * time.Millisecond,
		BackoffCoefficient: 2, MaxInterval: 2 * time.Second,
		NonRetryable: []string{capabilities.KindNotFound, capabilities.KindInvalidInput, capabilities.KindAuth}}
}

// ClassifyError decides from typed errors only: 429/502/503/504 and
// transport failures → RETRIABLE (with the server's Retry-After); 404 (an
// unknown city) → CRITICAL with the list of known cities; no city →
// REPLANNING (the plan should ask the user); other HTTP errors → CRITICAL.
func (*CurrentWeather) ClassifyError(err error, _ capabilities.ErrorContext) capabilities.Classification {
	details := map[string]any{capabilities.MetaTechnicalDetails: err.Error()}
	var he *HTTPError
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return capabilities.Classification{} // the default classifier knows these
	case errors.Is(err, ErrNoCity):
		details[capabilities.MetaReplanningReason] = "the question names no city; ask the user which city (clarify)"
		return capabilities.Classification{Severity: capabilities.Replanning, Kind: capabilities.KindInvalidInput,
			UserMessage: "The question does not say which city.", Metadata: details}
	case errors.As(err, &he):
		switch he.Status {
		case http.StatusTooManyRequests:
			return capabilities.Classification{Severity: capabilities.Retriable, Kind: capabilities.KindRateLimit,
				UserMessage: "The weather service is rate limiting requests.", RetryAfter: capabilities.Duration(he.RetryAfter), Metadata: details}
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return capabilities.Classification{Severity: capabilities.Retriable, Kind: capabilities.KindServerError,
				UserMessage: "The weather service is temporarily unavailable.", RetryAfter: capabilities.Duration(he.RetryAfter), Metadata: details}
		case http.StatusNotFound:
			details[capabilities.MetaSuggestions] = []string{"known cities: " + strings.Join(Cities(), ", ")}
			return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindNotFound,
				UserMessage: "The weather service has no data for that city.", Metadata: details}
		case http.StatusUnauthorized, http.StatusForbidden:
			return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindAuth,
				UserMessage: "The weather service refused the request (authorisation).", Metadata: details}
		}
		return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindUnknown,
			UserMessage: fmt.Sprintf("The weather service answered with HTTP %d.", he.Status), Metadata: details}
	case errors.Is(err, ErrFormat):
		return capabilities.Classification{Severity: capabilities.Retriable, Kind: capabilities.KindFormat,
			UserMessage: "The weather service sent a malformed answer.", Metadata: details}
	case errors.As(err, &ne):
		kind := capabilities.KindConnection
		if ne.Timeout() {
			kind = capabilities.KindTimeout
		}
		return capabilities.Classification{Severity: capabilities.Retriable, Kind: kind,
			UserMessage: "The weather service could not be reached.", Metadata: details}
	}
	return capabilities.Classification{Severity: capabilities.Critical, Kind: capabilities.KindUnknown,
		UserMessage: "Getting the weather failed.", Metadata: details}
}

func (*CurrentWeather) ClassifierGuide() *capabilities.ClassifierGuide {
	return &capabilities.ClassifierGuide{
		Instructions: "Select when the user asks about the weather in a city: is it raining, sunny, warm, cold, windy or humid there right now, or what the temperature is.",
		Examples: []capabilities.ClassifierExample{
			{Query: "What is the weather in Paris?", Result: true, Reason: "current weather in a city"},
			{Query: "Is it raining in London right now?", Result: true, Reason: "current conditions"},
			{Query: "How warm is it in Tokyo?", Result: true, Reason: "current temperature"},
			{Query: "What will the weather be next week?", Result: false, Reason: "a forecast, which this capability does not provide"},
			{Query: "What is the capital of France?", Result: false, Reason: "not about weather"},
		},
	}
}

func (*CurrentWeather) OrchestratorGuide() *capabilities.OrchestratorGuide {
	return &capabilities.OrchestratorGuide{
		Instructions: "Use current_weather once per city; put the city in parameters.city. If the user named no city, plan clarify instead.",
		Examples: []capabilities.OrchestratorExample{
			{Scenario: "Weather in Paris",
				Step: capabilities.PlannedStep{ContextKey: "paris_weather", Capability: "current_weather",
					TaskObjective: "Get the current weather in Paris", ExpectedOutput: WeatherDataType,
					Parameters: map[string]any{"city": "Paris"}}},
			{Scenario: "Compare London and Berlin",
				Step: capabilities.PlannedStep{ContextKey: "london_weather", Capability: "current_weather",
					TaskObjective: "Get the current weather in London", ExpectedOutput: WeatherDataType,
					Parameters: map[string]any{"city": "London"}},
				Notes: "a second step with city Berlin follows; the two can run in parallel"},
		},
	}
}
