package reqbody

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/apierror"
)

// bodyError turns a failed body read into what the client is told: 413
// for an oversized body, 408 for one that stopped arriving, 400 for one
// that ended early — never the network error, which names addresses.
func bodyError(r *http.Request, read int64, err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return err
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &apierror.RequestError{Kind: apierror.ErrBodyTimeout, Param: "body", Message: fmt.Sprintf(
			"the request body stopped arriving after %d of the %s: send the whole body, or a Content-Length that matches it", read, announced(r))}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apierror.BadRequest("body", "the request body ended after %d of the %s", read, announced(r))
	}
	return apierror.BadRequest("body", "the request body could not be read after %d bytes", read)
}

func announced(r *http.Request) string {
	if r.ContentLength >= 0 {
		return fmt.Sprintf("%d bytes its Content-Length announces", r.ContentLength)
	}
	return "bytes of its chunked encoding"
}

// Read reads the whole request body.
func Read(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, bodyError(r, int64(len(b)), err)
	}
	return b, nil
}

// Decode reads a JSON body into v: exactly one JSON value, unknown
// fields ignored (the OpenAI and AG-UI request shapes carry many fields the
// server does not use). Errors are 400s that name the field, 413 or 408.
func Decode(r *http.Request, v any) error {
	return decode(r, v, false)
}

// DecodeStrict is Decode refusing unknown fields: the native API's
// own shapes, where a misspelt field ("strem") must not be ignored.
func DecodeStrict(r *http.Request, v any) error {
	return decode(r, v, true)
}

func decode(r *http.Request, v any, strict bool) error {
	b, err := Read(r)
	if err != nil {
		return err
	}
	return Unmarshal(b, v, strict)
}

// Unmarshal decodes b, which must hold exactly one JSON value, into v
// (strict: refusing unknown fields).
func Unmarshal(b []byte, v any, strict bool) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return apierror.BadRequest("body", "a JSON object is required")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return apierror.BadRequest("body", "unexpected data after the JSON value at byte %d: the body must be exactly one JSON value", dec.InputOffset())
	}
	return nil
}

// jsonError is a decoding failure as a 400 naming the field and what was
// expected, in JSON's terms rather than Go's.
func jsonError(err error) error {
	var (
		se *json.SyntaxError
		te *json.UnmarshalTypeError
		re *apierror.RequestError
		oe *agent.OptionError
	)
	switch {
	case errors.As(err, &re):
		return re // a field's own decoder said what is wrong
	case errors.As(err, &oe):
		return apierror.BadRequest("options."+oe.Option, "%s", oe.Reason)
	case errors.As(err, &se):
		return apierror.BadRequest("body", "invalid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apierror.BadRequest("body", "invalid JSON: the body ends inside a value")
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
		}
		if strings.HasPrefix(err.Error(), "options: ") {
			field = "options." + field // decoded by agent.TurnOptions, which names its own fields only
		}
		field = jsonPath(field)
		if n, ok := strings.CutPrefix(te.Value, "number "); ok && jsonKind(te.Type) == "a number" {
			// A number no float holds (1e400): "expected a number" would not say why.
			return apierror.BadRequest(field, "%s is beyond the range of a 64-bit float (about ±1.8e308); give a finite number", n)
		}
		return apierror.BadRequest(field, "expected %s, got %s", jsonKind(te.Type), jsonValueName(te.Value))
	}
	msg := err.Error()
	if i := strings.Index(msg, "json: unknown field "); i >= 0 {
		name := strings.Trim(msg[i+len("json: unknown field "):], `"`)
		param := name
		if prefix := strings.TrimSuffix(msg[:i], ": "); prefix != "" && !strings.Contains(prefix, " ") {
			param = prefix + "." + name // "options: json: unknown field …"
		}
		return apierror.BadRequest(param, "unknown field %q", name)
	}
	// Anything else a decoder reports (a field's UnmarshalJSON): its words,
	// without Go's package prefixes.
	return apierror.BadRequest("body", "%s", strings.ReplaceAll(msg, "json: ", ""))
}

// jsonPath drops from a decoder's field path the names of embedded Go
// structs ("plan.steps.PlannedStep.parameters"): the request's own names
// are lower case.
func jsonPath(field string) string {
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p == "" || p[0] < 'A' || p[0] > 'Z' {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return field
	}
	return strings.Join(kept, ".")
}

// jsonKind names a Go type as the JSON value it is decoded from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "another type"
}

// jsonValueName is UnmarshalTypeError.Value ("number", "string", "number
// 1e999" …) with an article.
func jsonValueName(v string) string {
	switch {
	case v == "":
		return "another type"
	case strings.HasPrefix(v, "array"), strings.HasPrefix(v, "object"):
		return "an " + v
	}
	return "a " + v
}
