package llm

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/llm/vocab"
)

// The providers (vocab's).
const (
	ProviderOpenAI    = vocab.ProviderOpenAI    // OpenAI and any OpenAI-compatible server (vLLM, Ollama /v1, LiteLLM, gateways)
	ProviderAnthropic = vocab.ProviderAnthropic // Anthropic Messages API
	ProviderGoogleAI  = vocab.ProviderGoogleAI  // Google Gemini API
	ProviderOllama    = vocab.ProviderOllama    // Ollama's native API
)

// Providers lists the supported providers.
func Providers() []string { return vocab.Providers() }

// FallbackOffline is the Config.Fallback value that makes nodes use their
// offline strategies when the provider cannot be reached.
const FallbackOffline = vocab.FallbackOffline

// FallbackNone (or empty) classifies an unreachable provider like any other failure.
const FallbackNone = vocab.FallbackNone

// ErrConfig is the kind of every configuration error.
var ErrConfig = errors.New("llm: invalid configuration")

// ConfigError names the role and the field that is wrong.
type ConfigError struct {
	Role    Role
	Field   string
	Problem string
	// Err is the underlying cause, if any (for example ErrProviderNotCompiled).
	Err error
}

func (e *ConfigError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("llm: role %s: %s", e.Role, e.Problem)
	}
	return fmt.Sprintf("llm: role %s: %s: %s", e.Role, e.Field, e.Problem)
}
func (e *ConfigError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrConfig, e.Err}
	}
	return []error{ErrConfig}
}

// RoleConfig configures the model of one role.
type RoleConfig struct {
	// Provider: openai, anthropic, googleai or ollama.
	Provider string `json:"provider" yaml:"provider"`
	// Model is the provider's model name.
	Model string `json:"model" yaml:"model"`
	// BaseURL points the provider at another server (an OpenAI-compatible
	// gateway, a remote Ollama). Empty means the provider's default.
	BaseURL string `json:"base_url,omitempty" yaml:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the API key. Empty
	// means the provider's usual variable (OPENAI_API_KEY, ANTHROPIC_API_KEY,
	// GOOGLE_API_KEY); for openai with a BaseURL and for ollama no key is needed.
	APIKeyEnv string `json:"api_key_env,omitempty" yaml:"api_key_env,omitempty"`
	// Temperature is sent on every call (langchaingo always sends one); nil means 0.
	Temperature *float64 `json:"temperature,omitempty" yaml:"temperature,omitempty"`
	// MaxTokens caps replies; 0 means the provider's default.
	MaxTokens int `json:"max_tokens,omitempty" yaml:"max_tokens,omitempty"`
	// Timeout bounds one call; 0 means no limit beyond the caller's context.
	Timeout capabilities.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty"`
	// IdleTimeout bounds a pause in a streamed reply (before the first
	// token, or between two): past it the call is cancelled with
	// ErrStalled (RETRIABLE). 0 means DefaultIdleTimeout.
	IdleTimeout capabilities.Duration `json:"idle_timeout,omitempty" yaml:"idle_timeout,omitempty"`
	// LegacyMaxTokens sends max_tokens instead of max_completion_tokens
	// (openai provider; for servers that only accept the old field).
	LegacyMaxTokens bool `json:"legacy_max_tokens,omitempty" yaml:"legacy_max_tokens,omitempty"`
	// JSONMode says how a JSON reply is asked for (openai and ollama
	// providers): auto (empty), json_schema, json_object or off. See the
	// JSONMode constants.
	JSONMode string `json:"json_mode,omitempty" yaml:"json_mode,omitempty"`
	// StreamUsage sends stream_options.include_usage on streamed calls
	// (openai provider), so streamed replies report their tokens. nil means
	// send it, and leave it out for good once the server rejects it
	// (HTTP 400); false never sends it.
	StreamUsage *bool `json:"stream_usage,omitempty" yaml:"stream_usage,omitempty"`
	// PromptCache marks the system prompt, the part of every prompt that
	// stays the same from turn to turn, for the provider's prompt cache
	// (anthropic: cache_control "ephemeral" on the system prompt). nil means
	// on; false sends no marker. OpenAI and most OpenAI-compatible servers
	// cache a repeated prefix without one.
	PromptCache *bool `json:"prompt_cache,omitempty" yaml:"prompt_cache,omitempty"`
}

// JSON modes of RoleConfig.JSONMode (vocab's; see there what each does).
const (
	JSONModeAuto   = vocab.JSONModeAuto
	JSONModeSchema = vocab.JSONModeSchema
	JSONModeObject = vocab.JSONModeObject
	JSONModeOff    = vocab.JSONModeOff
)

// JSONModes lists the accepted json_mode values.
func JSONModes() []string { return vocab.JSONModes() }

// Config configures the models of every role.
type Config struct {
	// Roles maps a role to its model; "default" is used by every role not
	// configured. No roles at all means everything runs offline.
	Roles map[Role]RoleConfig `json:"roles,omitempty" yaml:"roles,omitempty"`
	// Fallback "offline" makes a node use its offline strategy when its
	// provider cannot be reached; empty means the failure is classified
	// (RETRIABLE) like any other.
	Fallback string `json:"fallback,omitempty" yaml:"fallback,omitempty"`
	// HTTPClient is the base client for provider calls; nil means a client
	// with http.DefaultTransport.
	HTTPClient *http.Client `json:"-" yaml:"-"`
	// LookupEnv reads API keys; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool) `json:"-" yaml:"-"`
	// Now is the clock for HTTP-date Retry-After values; nil means time.Now.
	Now func() time.Time `json:"-" yaml:"-"`
}

func defaultKeyEnv(provider string) string {
	switch provider {
	case ProviderOpenAI:
		return "OPENAI_API_KEY"
	case ProviderAnthropic:
		return "ANTHROPIC_API_KEY"
	case ProviderGoogleAI:
		return "GOOGLE_API_KEY"
	}
	return ""
}

// validate checks one role's config and resolves its API key.
func (rc RoleConfig) validate(role Role, lookup func(string) (string, bool)) (key, keyEnv string, err error) {
	var errs []error
	if !slices.Contains(Providers(), rc.Provider) {
		errs = append(errs, &ConfigError{Role: role, Field: "provider",
			Problem: fmt.Sprintf("%q is not one of %s", rc.Provider, strings.Join(Providers(), ", "))})
	}
	if strings.TrimSpace(rc.Model) == "" {
		errs = append(errs, &ConfigError{Role: role, Field: "model", Problem: "is empty"})
	}
	if rc.Temperature != nil && (*rc.Temperature < 0 || *rc.Temperature > 2) {
		errs = append(errs, &ConfigError{Role: role, Field: "temperature", Problem: fmt.Sprintf("%g is outside [0, 2]", *rc.Temperature)})
	}
	if rc.MaxTokens < 0 {
		errs = append(errs, &ConfigError{Role: role, Field: "max_tokens", Problem: "is negative"})
	}
	if rc.Timeout < 0 {
		errs = append(errs, &ConfigError{Role: role, Field: "timeout", Problem: "is negative"})
	}
	if rc.IdleTimeout < 0 {
		errs = append(errs, &ConfigError{Role: role, Field: "idle_timeout", Problem: "is negative"})
	}
	if rc.JSONMode != "" && !slices.Contains(JSONModes(), rc.JSONMode) {
		errs = append(errs, &ConfigError{Role: role, Field: "json_mode",
			Problem: fmt.Sprintf("%q is not one of %s", rc.JSONMode, strings.Join(JSONModes(), ", "))})
	}
	if len(errs) > 0 {
		return "", "", errors.Join(errs...)
	}
	keyEnv = rc.APIKeyEnv
	explicit := keyEnv != ""
	if !explicit {
		keyEnv = defaultKeyEnv(rc.Provider)
	}
	if keyEnv != "" {
		key, _ = lookup(keyEnv)
	}
	// A key is required only where a hosted API needs one: an explicit
	// variable must be set; the default variable is required for anthropic,
	// googleai, and openai without a base URL (a local server needs none).
	needKey := explicit || rc.Provider == ProviderAnthropic || rc.Provider == ProviderGoogleAI ||
		(rc.Provider == ProviderOpenAI && rc.BaseURL == "")
	if key == "" && needKey {
		return "", "", &ConfigError{Role: role, Field: "api_key_env",
			Problem: fmt.Sprintf("environment variable %s is not set (the API key for role %s)", keyEnv, role)}
	}
	return key, keyEnv, nil
}
