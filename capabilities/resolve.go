package capabilities

// ResolveRetryPolicy returns the retry policy in force for capability c,
// field by field: a field set in c's own policy wins, then the application's
// per-capability config (configured[c.Name()]), then the application's global
// default, then the built-in defaults (see WithDefaults). So an application
// can lower max_attempts for every capability and a capability can still say
// "never retry me" (max_attempts 1).
func ResolveRetryPolicy(c Capability, configured map[string]RetryPolicy, global RetryPolicy) RetryPolicy {
	var layers []RetryPolicy
	if c != nil {
		if own, ok := HasOwnRetryPolicy(c); ok {
			layers = append(layers, own)
		}
		if p, ok := configured[c.Name()]; ok {
			layers = append(layers, p)
		}
	}
	layers = append(layers, global)
	return MergeRetryPolicies(layers...)
}

// MergeRetryPolicies merges policies field by field, earlier ones winning,
// and fills what is still unset with the built-in defaults.
func MergeRetryPolicies(layers ...RetryPolicy) RetryPolicy {
	var p RetryPolicy
	for _, l := range layers {
		if p.MaxAttempts == 0 {
			p.MaxAttempts = l.MaxAttempts
		}
		if p.InitialInterval == 0 {
			p.InitialInterval = l.InitialInterval
		}
		if p.BackoffCoefficient == 0 {
			p.BackoffCoefficient = l.BackoffCoefficient
		}
		if p.MaxInterval == 0 {
			p.MaxInterval = l.MaxInterval
		}
		if p.Jitter == "" {
			p.Jitter = l.Jitter
		}
		if p.MaxElapsed == 0 {
			p.MaxElapsed = l.MaxElapsed
		}
		if p.NonRetryable == nil {
			p.NonRetryable = l.NonRetryable
		}
	}
	if p.MaxInterval != 0 && p.InitialInterval > p.MaxInterval {
		// A layer raised the initial interval above an inherited cap: the cap
		// follows, so the merged policy stays valid.
		p.MaxInterval = p.InitialInterval
	}
	return p.WithDefaults()
}
