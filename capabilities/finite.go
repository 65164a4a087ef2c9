package capabilities

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Numbers that are not numbers: ±Inf and NaN. JSON cannot carry them
// (json.Marshal fails on them, and a JSON number too large for a float64,
// 1e400, fails to decode), yet strconv.ParseFloat turns "1e400" or "inf"
// from a user's message into one. The framework refuses an action that
// holds one (ReasonNotFinite) and stores the rest in a form JSON can carry
// (FiniteCopy), so no such number ever fails a turn.

// ReasonNotFinite is the ActionRefusedError reason of an action that holds
// a number that is not finite: nobody is asked to approve it and it does
// not run.
const ReasonNotFinite = "not_finite"

// NonFiniteError says where a value holds ±Inf or NaN (CheckFinite).
type NonFiniteError struct {
	// Path is where the number is, in the value's JSON names
	// ("parameters.value", "changes[0].tolerance"); empty for the value
	// itself.
	Path string
	// Number is the number as Go writes it: "+Inf", "-Inf", "NaN", or a
	// json.Number beyond a float64 ("1e400").
	Number string
}

func (e *NonFiniteError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("the value is %s, which is not a finite number", e.Number)
	}
	return fmt.Sprintf("%s is %s, which is not a finite number", e.Path, e.Number)
}

// CheckFinite returns a *NonFiniteError for the first ±Inf or NaN in v
// (struct fields, map values in key order, slice elements; a json.Number
// beyond a float64 counts), or nil when every number in v is finite.
func CheckFinite(v any) error {
	var w finiteWalk
	if w.find(reflect.ValueOf(v), "", 0) {
		return &NonFiniteError{Path: w.path, Number: w.number}
	}
	return nil
}

// finiteWalk looks for the first number that is not finite.
type finiteWalk struct{ path, number string }

// maxDepth bounds the walks (json.Marshal itself gives up on a cycle).
const maxDepth = 1000

func (w *finiteWalk) find(v reflect.Value, path string, depth int) bool {
	if !v.IsValid() || depth > maxDepth {
		return false
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsInf(f, 0) || math.IsNaN(f) {
			w.path, w.number = path, nonFiniteText(f)
			return true
		}
	case reflect.String:
		if v.Type() == jsonNumber {
			if _, err := strconv.ParseFloat(v.String(), 64); err != nil {
				w.path, w.number = path, v.String()
				return true
			}
		}
	case reflect.Interface, reflect.Pointer:
		return !v.IsNil() && w.find(v.Elem(), path, depth+1)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			name, ok := jsonField(t.Field(i))
			if ok && w.find(v.Field(i), join(path, name), depth+1) {
				return true
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			if w.find(v.MapIndex(k), join(path, fmt.Sprint(k)), depth+1) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		if !holdsFloats(v.Type().Elem()) {
			return false
		}
		for i := range v.Len() {
			if w.find(v.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1) {
				return true
			}
		}
	}
	return false
}

var jsonNumber = reflect.TypeFor[json.Number]()

// jsonField is the JSON name of a struct field json.Marshal writes, and
// whether it writes it. (An embedded struct's fields count as its own.)
func jsonField(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" || !f.IsExported() && !f.Anonymous {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" && f.Anonymous {
		return "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, true
}

func join(path, name string) string {
	switch {
	case name == "":
		return path
	case path == "":
		return name
	}
	return path + "." + name
}

// holdsFloats reports whether a value of type t can hold a float (bytes,
// strings and the like cannot: their slices need no walk).
func holdsFloats(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Complex64, reflect.Complex128, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return false
	case reflect.String:
		return t == jsonNumber
	}
	return true
}

func nonFiniteText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case f > 0:
		return "+Inf"
	}
	return "-Inf"
}

// FiniteCopy returns v itself when every number in it is finite, else a
// copy in which each ±Inf and NaN is written as JSON can carry it: a
// number held in an interface (a step parameter, a change's or a reading's
// value, classification metadata, a table cell) becomes the string "+Inf",
// "-Inf" or "NaN", which nothing reads as a number again; a field typed as
// a number keeps a number, the largest finite one of the sign for ±Inf and
// 0 for NaN. Only what lies on the way to such a number is copied; v is
// not modified. json.Marshal(FiniteCopy(v)) fails only where
// json.Marshal(v) fails for another reason.
func FiniteCopy(v any) any {
	if r, changed := finiteCopy(reflect.ValueOf(v), false, 0); changed {
		return r.Interface()
	}
	return v
}

// isNonFiniteJSON reports whether err is json.Marshal's error for ±Inf or
// NaN (which FiniteCopy avoids).
func isNonFiniteJSON(err error) bool {
	var uv *json.UnsupportedValueError
	if !errors.As(err, &uv) {
		return false
	}
	return uv.Str == "+Inf" || uv.Str == "-Inf" || uv.Str == "NaN"
}

// finiteCopy returns the replacement of v and true when v holds a number
// that is not finite. inInterface says v is held in an empty interface,
// where a string may stand for the number.
func finiteCopy(v reflect.Value, inInterface bool, depth int) (reflect.Value, bool) {
	if !v.IsValid() || depth > maxDepth {
		return v, false
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if !math.IsInf(f, 0) && !math.IsNaN(f) {
			return v, false
		}
		if inInterface {
			return reflect.ValueOf(nonFiniteText(f)), true
		}
		limit := math.MaxFloat64
		if v.Kind() == reflect.Float32 {
			limit = math.MaxFloat32
		}
		switch {
		case math.IsNaN(f):
			f = 0
		case f < 0:
			f = -limit
		default:
			f = limit
		}
		return reflect.ValueOf(f).Convert(v.Type()), true
	case reflect.Interface:
		if v.IsNil() {
			return v, false
		}
		r, changed := finiteCopy(v.Elem(), v.Type().NumMethod() == 0, depth+1)
		if !changed {
			return v, false
		}
		if !r.Type().AssignableTo(v.Type()) {
			// A non-empty interface cannot hold the string: a number.
			if r, changed = finiteCopy(v.Elem(), false, depth+1); !changed || !r.Type().AssignableTo(v.Type()) {
				return v, false
			}
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(r)
		return out, true
	case reflect.Pointer:
		if v.IsNil() {
			return v, false
		}
		r, changed := finiteCopy(v.Elem(), false, depth+1)
		if !changed {
			return v, false
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(r)
		return out, true
	case reflect.Struct:
		var out reflect.Value
		t := v.Type()
		for i := range t.NumField() {
			if _, ok := jsonField(t.Field(i)); !ok {
				continue
			}
			r, changed := finiteCopy(v.Field(i), false, depth+1)
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.New(t).Elem()
				out.Set(v)
			}
			if f := out.Field(i); f.CanSet() {
				f.Set(r)
			}
		}
		return out, out.IsValid()
	case reflect.Map:
		if v.IsNil() {
			return v, false
		}
		var out reflect.Value
		it := v.MapRange()
		for it.Next() {
			r, changed := finiteCopy(it.Value(), false, depth+1)
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.MakeMapWithSize(v.Type(), v.Len())
				inner := v.MapRange()
				for inner.Next() {
					out.SetMapIndex(inner.Key(), inner.Value())
				}
			}
			out.SetMapIndex(it.Key(), r)
		}
		return out, out.IsValid()
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() || !holdsFloats(v.Type().Elem()) {
			return v, false
		}
		var out reflect.Value
		for i := range v.Len() {
			r, changed := finiteCopy(v.Index(i), false, depth+1)
			if !changed {
				continue
			}
			if !out.IsValid() {
				if v.Kind() == reflect.Slice {
					out = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
					reflect.Copy(out, v)
				} else {
					out = reflect.New(v.Type()).Elem()
					out.Set(v)
				}
			}
			out.Index(i).Set(r)
		}
		return out, out.IsValid()
	}
	return v, false
}

// MarshalFinite is json.Marshal, except that a value holding ±Inf or NaN
// is encoded as FiniteCopy writes it instead of failing. A value without
// one gives exactly json.Marshal's bytes.
func MarshalFinite(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil && isNonFiniteJSON(err) {
		return json.Marshal(FiniteCopy(v))
	}
	return b, err
}

// The types that carry a value of any type encode ±Inf and NaN as
// FiniteCopy does, wherever they are encoded (a checkpoint, an approval, an
// audit record, an event): JSON encoding never fails on one.

// MarshalJSON encodes the change as its fields, a value that is not finite
// as FiniteCopy writes it.
func (c Change) MarshalJSON() ([]byte, error) {
	type plain Change
	return MarshalFinite(plain(c))
}

// MarshalJSON encodes the reading as its fields, a value that is not
// finite as FiniteCopy writes it.
func (r Reading) MarshalJSON() ([]byte, error) {
	type plain Reading
	return MarshalFinite(plain(r))
}

// MarshalJSON encodes the classification as its fields, metadata that is
// not finite as FiniteCopy writes it.
func (c Classification) MarshalJSON() ([]byte, error) {
	type plain Classification
	return MarshalFinite(plain(c))
}
