package nodes

import (
	"slices"

	"github.com/capgraph/capgraph/llm"
)

// replyShape is a JSON reply the nodes parse: its top-level fields, from
// which come the keys the parser accepts and looks for (extractJSON,
// strictObject) and the JSON schema sent as structured output. Adding a
// field to a reply is one line in its shape.
type replyShape struct {
	name   string
	fields []shapeField
	sch    *llm.Schema // built once: every call of the role sends it
}

// shapeField is one key of an object.
type shapeField struct {
	key      string
	t        jsonType
	optional bool
}

// jsonType is the schema of a value; closed is false when it admits keys not
// listed (a free-form object), which rules out strict structured output.
type jsonType struct {
	schema map[string]any
	closed bool
}

func required(key string, t jsonType) shapeField { return shapeField{key: key, t: t} }

// optional fields may be absent or null.
func optional(key string, t jsonType) shapeField { return shapeField{key: key, t: t, optional: true} }

func jsonString() jsonType  { return jsonType{map[string]any{"type": "string"}, true} }
func jsonBoolean() jsonType { return jsonType{map[string]any{"type": "boolean"}, true} }
func jsonNumber() jsonType  { return jsonType{map[string]any{"type": "number"}, true} }

// jsonEnum is a string from a fixed list.
func jsonEnum(values ...string) jsonType {
	return jsonType{map[string]any{"type": "string", "enum": slices.Clone(values)}, true}
}

func jsonArray(items jsonType) jsonType {
	return jsonType{map[string]any{"type": "array", "items": items.schema}, items.closed}
}

// jsonFreeObject is an object with any keys and values.
func jsonFreeObject() jsonType { return jsonType{map[string]any{"type": "object"}, false} }

// jsonMap is an object with any keys whose values have type values.
func jsonMap(values jsonType) jsonType {
	return jsonType{map[string]any{"type": "object", "additionalProperties": values.schema}, false}
}

// jsonObject is an object with exactly the fields given. When every value is
// closed the schema is strict-ready: every key is required and an optional
// one is nullable (the parser reads null as absent).
func jsonObject(fields ...shapeField) jsonType {
	closed := true
	for _, f := range fields {
		closed = closed && f.t.closed
	}
	props := map[string]any{}
	req := []string{}
	for _, f := range fields {
		s := f.t.schema
		if f.optional && closed {
			s = map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
		}
		props[f.key] = s
		if !f.optional || closed {
			req = append(req, f.key)
		}
	}
	return jsonType{map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}, closed}
}

func newShape(name string, fields ...shapeField) replyShape {
	s := replyShape{name: name, fields: fields}
	obj := jsonObject(fields...)
	s.sch = &llm.Schema{Name: name, Strict: obj.closed, Schema: obj.schema}
	return s
}

// keys are the top-level keys the reply may have.
func (s replyShape) keys() []string {
	out := make([]string, len(s.fields))
	for i, f := range s.fields {
		out[i] = f.key
	}
	return out
}

// schema is the shape's JSON schema for structured output, shared by every
// request that sends it (llm.Schema is read-only).
func (s replyShape) schema() *llm.Schema { return s.sch }

// with returns the shape with the field of the same key replaced (a
// selection whose names are limited to the registered capabilities).
func (s replyShape) with(f shapeField) replyShape {
	fields := slices.Clone(s.fields)
	for i := range fields {
		if fields[i].key == f.key {
			fields[i] = f
		}
	}
	return newShape(s.name, fields...)
}
