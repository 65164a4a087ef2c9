// Package weather is capgraph's hello-world example: a loopback mock weather
// HTTP service that fails 30% of requests with 503 (deterministically, from
// a seed), a typed HTTP client, and one capability, current_weather, whose
// retry policy and error classification turn those failures into retries
// that recover.
package weather
