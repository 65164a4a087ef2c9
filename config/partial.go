package config

import (
	"reflect"
	"strings"
)

// prune takes out of c what the problem at key concerns, so a check of the
// rest (LoadPartial) does not trip over a value already reported: an entry
// of a map (a model role, an MCP server, a capability's retry policy) goes
// as a whole, any other key gets its default back. A problem under
// models.default drops every role, since the others inherit from it.
func (c *Config) prune(key string) {
	if key == "" {
		return
	}
	if key == "models.default" || strings.HasPrefix(key, "models.default.") {
		c.Models = nil
		return
	}
	pruneValue(reflect.ValueOf(c).Elem(), reflect.ValueOf(Default()).Elem(), splitKey(key))
}

// splitKey splits "server.api_keys[1].name" into server, api_keys, [1], name.
func splitKey(key string) []string {
	var out []string
	for _, part := range strings.Split(key, ".") {
		for {
			i := strings.IndexByte(part, '[')
			if i < 0 {
				break
			}
			if i > 0 {
				out = append(out, part[:i])
			}
			j := strings.IndexByte(part[i:], ']')
			if j < 0 {
				break
			}
			out = append(out, part[i:i+j+1])
			part = part[i+j+1:]
		}
		if part != "" {
			out = append(out, part)
		}
	}
	return out
}

// pruneValue walks v (and def, the same place in the defaults) along path.
func pruneValue(v, def reflect.Value, path []string) {
	if len(path) == 0 {
		if def.IsValid() && v.CanSet() && def.Type() == v.Type() {
			v.Set(def)
		} else if v.CanSet() {
			v.SetZero()
		}
		return
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
		if def.IsValid() && def.Kind() == reflect.Pointer && !def.IsNil() {
			def = def.Elem()
		} else {
			def = reflect.Value{}
		}
	}
	seg := path[0]
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if f.IsExported() && fieldName(f) == seg {
				var d reflect.Value
				if def.IsValid() {
					d = def.Field(i)
				}
				pruneValue(v.Field(i), d, path[1:])
				return
			}
		}
	case reflect.Map:
		// The entry goes as a whole: half a model role or MCP server
		// would only raise problems of its own.
		if !v.IsNil() {
			v.SetMapIndex(reflect.ValueOf(seg).Convert(v.Type().Key()), reflect.Value{})
		}
	case reflect.Slice:
		// A list element stays as it is (an API key): taking it out would
		// renumber the others, and a check of it reports under its own
		// key, which wiring.Runtime.Check folds into the file's problem.
	}
}
