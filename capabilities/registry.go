package capabilities

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// ErrInvalidCapability is the kind of every registration error.
var ErrInvalidCapability = errors.New("invalid capability")

// RegistrationError names a capability and what is wrong with it.
type RegistrationError struct {
	Capability string
	Problem    string
}

func (e *RegistrationError) Error() string {
	return fmt.Sprintf("capability %q: %s", e.Capability, e.Problem)
}
func (e *RegistrationError) Unwrap() error { return ErrInvalidCapability }

var (
	namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	typePattern = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// Registry holds the application's capabilities. It is safe for concurrent
// reads once built.
type Registry struct {
	mu    sync.RWMutex
	caps  map[string]Capability
	order []string
	types map[string]string // declared context types → description
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{caps: map[string]Capability{}, types: map[string]string{}}
}

// DeclareContextType declares a context type that no capability provides but
// that may exist in the context store (for example seeded by the application).
func (r *Registry) DeclareContextType(name, description string) error {
	if !typePattern.MatchString(name) {
		return fmt.Errorf("%w: context type %q must be UPPER_SNAKE_CASE", ErrInvalidCapability, name)
	}
	r.mu.Lock()
	r.types[name] = description
	r.mu.Unlock()
	return nil
}

// ContextTypes returns the declared context types (DeclareContextType)
// with their descriptions, so a copy of the registry can declare them too.
func (r *Registry) ContextTypes() map[string]string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return maps.Clone(r.types)
}

// Register adds capabilities, checking each on its own (name, types,
// duplicates, what Define found). It registers the good ones and returns
// every problem of the others together (errors.Join of
// *RegistrationError, each naming its capability). Cross-capability
// checks are in Validate.
func (r *Registry) Register(caps ...Capability) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, c := range caps {
		if c == nil {
			errs = append(errs, &RegistrationError{Capability: "<nil>", Problem: "nil capability"})
			continue
		}
		name := c.Name()
		label := name
		if label == "" {
			label = "<unnamed: " + c.Description() + ">"
		}
		var problems []string
		if dp, ok := c.(interface{ definitionProblems() []string }); ok {
			problems = append(problems, dp.definitionProblems()...)
		}
		switch {
		case name == "":
			problems = append(problems, "has no name")
		case !namePattern.MatchString(name):
			problems = append(problems, "name must be lower_snake_case")
		case r.caps[name] != nil:
			problems = append(problems, "registered twice")
		}
		if strings.TrimSpace(c.Description()) == "" {
			problems = append(problems, "description is empty")
		}
		for _, t := range c.Provides() {
			if !typePattern.MatchString(t) {
				problems = append(problems, fmt.Sprintf("provides context type %q, which is not UPPER_SNAKE_CASE", t))
			}
		}
		for _, q := range c.Requires() {
			if !typePattern.MatchString(q.Type) {
				problems = append(problems, fmt.Sprintf("requires context type %q, which is not UPPER_SNAKE_CASE", q.Type))
			}
			if q.Cardinality != "" && q.Cardinality != Single && q.Cardinality != Multiple {
				problems = append(problems, fmt.Sprintf("requirement %s has cardinality %q (want single or multiple)", q.Type, q.Cardinality))
			}
		}
		if p, ok := HasOwnRetryPolicy(c); ok {
			if err := p.Validate(); err != nil {
				problems = append(problems, "retry policy: "+err.Error())
			}
		}
		for _, p := range problems {
			errs = append(errs, &RegistrationError{Capability: label, Problem: p})
		}
		if len(problems) > 0 {
			continue
		}
		r.caps[name] = c
		r.order = append(r.order, name)
	}
	return errors.Join(errs...)
}

// Validate checks the registry as a whole: every required context type has a
// provider (or is declared), producers and consumers that state the values'
// Go types (New, Key.Required) agree on them, every fallback exists.
func (r *Registry) Validate() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var errs []error
	provided := map[string]bool{}
	for _, c := range r.caps {
		for _, t := range c.Provides() {
			provided[t] = true
		}
	}
	// The Go type each context type's values have, from the first typed
	// provider (registration order); another provider or a consumer that
	// says otherwise is a problem.
	goTypes := map[string]reflect.Type{}
	goTypeBy := map[string]string{}
	for _, name := range r.order {
		tp, ok := r.caps[name].(TypedProvider)
		if !ok {
			continue
		}
		types := tp.ProvidedTypes()
		for _, ct := range slices.Sorted(maps.Keys(types)) {
			gt := types[ct]
			switch first, seen := goTypes[ct]; {
			case !seen:
				goTypes[ct], goTypeBy[ct] = gt, name
			case first != gt:
				errs = append(errs, &RegistrationError{Capability: name, Problem: fmt.Sprintf("provides %s as %s, but %s provides it as %s", ct, gt, goTypeBy[ct], first)})
			}
		}
	}
	for _, name := range r.order {
		c := r.caps[name]
		for _, q := range c.Requires() {
			if !provided[q.Type] && r.types[q.Type] == "" {
				errs = append(errs, &RegistrationError{Capability: name, Problem: fmt.Sprintf("requires %s, which no capability provides", q.Type)})
			}
			if gt, ok := goTypes[q.Type]; ok && q.goType != nil && q.goType != gt {
				errs = append(errs, &RegistrationError{Capability: name, Problem: fmt.Sprintf("requires %s as %s, but %s provides it as %s", q.Type, q.goType, goTypeBy[q.Type], gt)})
			}
		}
		if f, ok := c.(FallbackProvider); ok {
			for _, fb := range f.Fallbacks() {
				if r.caps[fb] == nil {
					errs = append(errs, &RegistrationError{Capability: name, Problem: fmt.Sprintf("fallback %q is not registered", fb)})
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Get returns a capability by name.
func (r *Registry) Get(name string) (Capability, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, ok := r.caps[name]
	return c, ok
}

// Names lists capability names in registration order.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.order)
}

// All lists capabilities in registration order.
func (r *Registry) All() []Capability {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Capability, len(r.order))
	for i, n := range r.order {
		out[i] = r.caps[n]
	}
	return out
}

// Providers lists the capabilities that provide a context type, in
// registration order.
func (r *Registry) Providers(contextType string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []string
	for _, n := range r.order {
		if slices.Contains(r.caps[n].Provides(), contextType) {
			out = append(out, n)
		}
	}
	return out
}

// Overview is the "• name: description" list used in prompts.
func (r *Registry) Overview() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var b strings.Builder
	for _, n := range r.order {
		fmt.Fprintf(&b, "• %s: %s\n", n, r.caps[n].Description())
	}
	return strings.TrimRight(b.String(), "\n")
}
