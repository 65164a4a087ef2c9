package capabilities

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Key is a context type whose values are Ts, declared once and used by the
// capabilities that produce it (New, Key.Result) and those that consume it
// (Key.Required, Key.Input):
//
//	var Setpoint = capabilities.Key[float64]("MAGNET_SETPOINT")
//
// The registry compares the Go types of producers and consumers, so a plan
// cannot hand a string to a capability that reads a float64.
type Key[T any] string

// Required is a requirement of exactly one value of the key's type.
func (k Key[T]) Required() Requirement {
	return Requirement{Type: string(k), Cardinality: Single, goType: reflect.TypeFor[T]()}
}

// RequiredAll is a requirement of one or more values of the key's type.
func (k Key[T]) RequiredAll() Requirement {
	return Requirement{Type: string(k), Cardinality: Multiple, goType: reflect.TypeFor[T]()}
}

// Input returns the step's one resolved input of the key's type. It fails
// with ErrMissingInput when the step has none and with an error naming the
// type when it has several.
func (k Key[T]) Input(step Step) (T, error) {
	var zero T
	var found []ContextEntry
	for _, e := range step.Resolved {
		if e.Type == string(k) {
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
		return zero, fmt.Errorf("%w: step %q needs a %s input", ErrMissingInput, step.ContextKey, k)
	case 1:
		return decode[T](found[0])
	}
	return zero, fmt.Errorf("step %q has %d %s inputs, expected one", step.ContextKey, len(found), k)
}

// Inputs returns every resolved input of the key's type, in step order. It
// fails with ErrMissingInput when there is none.
func (k Key[T]) Inputs(step Step) ([]T, error) {
	var out []T
	for _, e := range step.Resolved {
		if e.Type != string(k) {
			continue
		}
		v, err := decode[T](e)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: step %q needs a %s input", ErrMissingInput, step.ContextKey, k)
	}
	return out, nil
}

// Result is the one-value output of a value of the key's type.
func (k Key[T]) Result(value T, summary string) Output { return Result(string(k), value, summary) }

// TypedProvider is implemented by a capability that states the Go type of
// the values it provides, by context type (New does). Registry.Validate
// compares them with the types its consumers require (Key.Required).
type TypedProvider interface {
	ProvidedTypes() map[string]reflect.Type
}

// New returns a capability whose parameters are an Args struct and whose
// result is one value of the key's type. d gives the name, description,
// retry policy, guides and the rest; New fills Provides and Run. The
// parameters' JSON schema, inferred from Args (json tags for the names,
// omitempty for optional fields, a jsonschema tag for each field's
// description), is shown to the planner, and a step's parameters are
// checked against Args before run is called: a missing, unknown or
// mistyped parameter fails the step REPLANNING, naming the field, so the
// planner writes the step again. run returns the value and its summary
// (the facts a user needs, for prompts and the offline answer).
//
// Offline, the planner writes no parameters: a capability that must work
// offline makes its fields optional and reads step.Task when they are
// absent. Problems of d or Args are reported by Register.
func New[Args, Result any](d Definition, provides Key[Result], run func(ctx context.Context, step Step, args Args) (Result, string, error)) Capability {
	var problems []string
	if d.Run != nil || d.Provides != nil {
		problems = append(problems, "New sets Run and Provides: leave them out of the Definition")
	}
	if run == nil {
		problems = append(problems, "has no run function")
	}
	schema, err := schemaOf(reflect.TypeFor[Args]())
	if err != nil {
		problems = append(problems, "parameters: "+err.Error())
	}
	d.Provides = []string{string(provides)}
	d.Run = func(ctx context.Context, step Step) (Output, error) {
		args, err := Params[Args](step)
		if err != nil {
			return Output{}, err
		}
		v, summary, err := run(ctx, step, args)
		if err != nil {
			return Output{}, err
		}
		return provides.Result(v, summary), nil
	}
	if t := reflect.TypeFor[Args](); t.Kind() == reflect.Struct && len(fields(t)) > 0 {
		guide := OrchestratorGuide{} // a copy: the caller's guide is not changed
		if d.OrchestratorGuide != nil {
			guide = *d.OrchestratorGuide
		}
		guide.Parameters = schema
		d.OrchestratorGuide = &guide
	}
	c := Define(d).(*defined)
	c.problems = append(c.problems, problems...)
	c.types = map[string]reflect.Type{string(provides): reflect.TypeFor[Result]()}
	return c
}

// Params decodes a step's parameters into a T (a struct), checking them
// as New does: a parameter T has no field for, one of the wrong type, or a
// required field (no omitempty) left out is an *Error of severity
// Replanning, kind invalid_input, naming each field, for the planner to
// correct. A side-effecting capability's Action uses it to read the same
// parameters as its Run.
func Params[T any](step Step) (T, error) {
	var v T
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Struct {
		return v, fmt.Errorf("capabilities.Params: %s is not a struct", t)
	}
	var problems []string
	b, err := json.Marshal(step.Parameters)
	if err != nil {
		return v, NewError(Replanning, KindInvalidInput, "The step's parameters cannot be read: "+err.Error(), err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			problems = append(problems, fmt.Sprintf("parameter %q must be %s, not a %s", te.Field, jsonTypeName(te.Type), te.Value))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name := strings.TrimPrefix(err.Error(), "json: unknown field ")
			problems = append(problems, fmt.Sprintf("there is no parameter %s (the parameters are %s)", name, strings.Join(fieldNames(t), ", ")))
		default:
			problems = append(problems, "parameters: "+err.Error())
		}
	}
	for _, f := range fields(t) {
		if !f.optional {
			if p, ok := step.Parameters[f.name]; !ok || p == nil {
				problems = append(problems, fmt.Sprintf("parameter %q is missing (%s)", f.name, f.describe()))
			}
		}
	}
	if len(problems) == 0 {
		return v, nil
	}
	msg := "The step's parameters are wrong: " + strings.Join(problems, "; ") + "."
	return v, &Error{Severity: Replanning, Kind: KindInvalidInput, UserMessage: msg,
		Metadata: map[string]any{MetaReplanningReason: "write the step's parameters as the capability's parameter schema says"}}
}

// field is one parameter of an Args struct.
type field struct {
	name, description string
	optional          bool
	t                 reflect.Type
}

func (f field) describe() string {
	if f.description != "" {
		return jsonTypeName(f.t) + ": " + f.description
	}
	return jsonTypeName(f.t)
}

// fields lists a struct's JSON fields (embedded structs' too).
func fields(t reflect.Type) []field {
	var out []field
	for _, sf := range reflect.VisibleFields(t) {
		if !sf.IsExported() || sf.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		optional := sf.Type.Kind() == reflect.Pointer
		for _, o := range strings.Split(opts, ",") {
			optional = optional || o == "omitempty" || o == "omitzero"
		}
		out = append(out, field{name: name, description: sf.Tag.Get("jsonschema"), optional: optional, t: sf.Type})
	}
	return out
}

func fieldNames(t reflect.Type) []string {
	var out []string
	for _, f := range fields(t) {
		out = append(out, f.name)
	}
	return out
}

var timeType = reflect.TypeFor[time.Time]()

// jsonTypeName says what JSON a Go type takes, for messages.
func jsonTypeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return "a time (RFC 3339)"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() == reflect.Bool:
		return "true or false"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "an integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		return "a list"
	}
	return "an object"
}

// schemaOf infers the JSON schema of an Args struct: an object whose
// properties are its fields, required unless omitempty (or a pointer).
func schemaOf(t reflect.Type) (json.RawMessage, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%s is not a struct", t)
	}
	s, err := schemaOfType(t, 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

func schemaOfType(t reflect.Type, depth int) (map[string]any, error) {
	if depth > 8 {
		return nil, fmt.Errorf("%s nests too deep", t)
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t.Kind() == reflect.String:
		return map[string]any{"type": "string"}, nil
	case t.Kind() == reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return map[string]any{"type": "integer"}, nil
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		items, err := schemaOfType(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case t.Kind() == reflect.Map && t.Key().Kind() == reflect.String:
		return map[string]any{"type": "object"}, nil
	case t.Kind() == reflect.Struct:
		props := map[string]any{}
		var required []string
		for _, f := range fields(t) {
			p, err := schemaOfType(f.t, depth+1)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.name, err)
			}
			if f.description != "" {
				p["description"] = f.description
			}
			props[f.name] = p
			if !f.optional {
				required = append(required, f.name)
			}
		}
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			slices.Sort(required)
			s["required"] = required
		}
		return s, nil
	}
	return nil, fmt.Errorf("a %s cannot be a parameter (want strings, numbers, bools, times, lists and structs of them)", t)
}
