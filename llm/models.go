package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync/atomic"
	"time"
)

// Set is the Models built from a Config: one model per configured role, the
// default role's model for the others.
type Set struct {
	models map[Role]Model
}

// For returns the model of role, or the default role's; ok is false when
// neither is configured.
func (s *Set) For(role Role) (Model, bool) {
	if s == nil {
		return nil, false
	}
	if m, ok := s.models[role]; ok {
		return m, true
	}
	m, ok := s.models[RoleDefault]
	if !ok {
		return nil, false
	}
	return roleBound{m, role}, true
}

// roleBound stamps the asking role on requests served by the default model,
// so errors name the role the user would configure.
type roleBound struct {
	inner Model
	role  Role
}

func (r roleBound) Generate(ctx context.Context, req Request) (Response, error) {
	if req.Role == "" {
		req.Role = r.role
	}
	return r.inner.Generate(ctx, req)
}

func (r roleBound) reasoningOpenedInPrompt() *atomic.Bool { return reasoningMemoOf(r.inner) }
func (r roleBound) Cancelable() bool                      { return IsCancelable(r.inner) }

// Configured lists the roles with a model of their own, in Roles order.
func (s *Set) Configured() []Role {
	var out []Role
	for _, r := range Roles() {
		if _, ok := s.models[r]; ok {
			out = append(out, r)
		}
	}
	return out
}

// New builds the models of every configured role. Every problem is reported
// (joined), each naming its role and field. A Config without roles gives a
// Set whose For always reports false: the agent runs offline.
func New(cfg Config) (*Set, error) {
	lookup := cfg.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	switch cfg.Fallback {
	case "", FallbackNone, FallbackOffline:
	default:
		return nil, fmt.Errorf("%w: fallback must be %q or %q, got %q", ErrConfig, FallbackNone, FallbackOffline, cfg.Fallback)
	}
	set := &Set{models: map[Role]Model{}}
	var errs []error
	for role, rc := range cfg.Roles {
		if !slices.Contains(Roles(), role) {
			errs = append(errs, &ConfigError{Role: role, Problem: fmt.Sprintf("unknown role (want one of %v)", Roles())})
			continue
		}
		key, keyEnv, err := rc.validate(role, lookup)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pm, err := newProviderModel(role, rc, key, keyEnv, client, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		m := Watch(pm, rc.IdleTimeout.D())
		if cfg.Fallback == FallbackOffline {
			m = offlineFallback{m}
		}
		set.models[role] = m
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return set, nil
}
