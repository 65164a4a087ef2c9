package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/capgraph/capgraph/typo"
)

// Load reads and parses a configuration file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Problems: []Problem{{Problem: "cannot read the file: " + unwrapPathError(err)}}}
	}
	return Parse(data, path)
}

func unwrapPathError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse parses a configuration file's contents; filename is used in errors.
// Keys the file leaves out keep their Default values. On any problem it
// returns a *Error listing them all.
func Parse(data []byte, filename string) (*Config, error) {
	return parse(data, filename, os.LookupEnv)
}

func parse(data []byte, filename string, lookup func(string) (string, bool)) (*Config, error) {
	cfg, err := parsePartial(data, filename, lookup)
	if err != nil {
		return nil, err
	}
	if len(cfg.problems) > 0 {
		return nil, &Error{File: filename, Problems: cfg.problems}
	}
	return cfg, nil
}

// LoadPartial reads a file to check it: like Load, but a file with problems
// still gives a Config — what the file says without what has a problem —
// and the problems, in line order, in its Problems. A key with a problem
// keeps its default; a model role, an MCP server or a capability's retry
// policy with a problem is left out (all roles when models.default has
// one). So the rest of the file can be checked further, and every problem
// reported at once (wiring.Runtime.Check). Only a file that cannot be read,
// or is not YAML, gives an error. To run with a file, use Load.
func LoadPartial(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Problems: []Problem{{Problem: "cannot read the file: " + unwrapPathError(err)}}}
	}
	return parsePartial(data, path, os.LookupEnv)
}

// parsePartial parses a file; the problems found go to the Config's
// problems, and what has one is pruned (see LoadPartial). Only a syntax
// error, or a document that is not a mapping, is returned as an error.
func parsePartial(data []byte, filename string, lookup func(string) (string, bool)) (*Config, error) {
	cfg := Default()
	cfg.source = filename
	d := &decoder{lookup: lookup, lines: cfg.lines}

	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return cfg, nil // an empty file is the default config
		}
		return nil, &Error{File: filename, Problems: []Problem{syntaxProblem(err)}}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			return nil, &Error{File: filename, Problems: []Problem{syntaxProblem(err)}}
		}
		return nil, &Error{File: filename, Problems: []Problem{{Line: line, Problem: "a second YAML document (---); the file must hold exactly one"}}}
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	if doc.Kind == yaml.ScalarNode && doc.Tag == "!!null" {
		return cfg, nil
	}
	if doc.Kind != yaml.MappingNode {
		return nil, &Error{File: filename, Problems: []Problem{{Line: doc.Line, Problem: "the file must be a mapping of keys (models:, limits:, …), got " + kindName(doc)}}}
	}
	d.decode(doc, reflect.ValueOf(cfg).Elem(), "")
	d.validate(cfg)
	for i := range cfg.Server.APIKeys {
		if cfg.Server.APIKeys[i].Tenant == "" {
			cfg.Server.APIKeys[i].Tenant = cfg.Server.APIKeys[i].Name
		}
	}
	slices.SortStableFunc(d.problems, func(a, b Problem) int { return a.Line - b.Line })
	slices.SortStableFunc(d.warnings, func(a, b Problem) int { return a.Line - b.Line })
	cfg.warnings = d.warnings
	cfg.problems = d.problems
	for _, p := range d.problems {
		cfg.prune(p.Key)
	}
	return cfg, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxProblem turns a yaml.v3 syntax error into a Problem. yaml.v3 reports
// syntax errors only as text ("yaml: line 3: mapping values are not
// allowed in this context"), so this is the one place that reads an error
// message; it is table-tested.
func syntaxProblem(err error) Problem {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Line: line, Problem: "YAML syntax: " + m[2]}
	}
	return Problem{Problem: "YAML syntax: " + strings.TrimPrefix(msg, "yaml: ")}
}

type decoder struct {
	lookup   func(string) (string, bool)
	lines    map[string]int
	problems []Problem
	warnings []Problem
}

func (d *decoder) add(line int, key, format string, args ...any) {
	d.problems = append(d.problems, Problem{Line: line, Key: key, Problem: fmt.Sprintf(format, args...)})
}

// warn records something allowed but probably wrong (Config.Warnings).
func (d *decoder) warn(key, format string, args ...any) {
	d.warnings = append(d.warnings, Problem{Line: d.line(key), Key: key, Problem: fmt.Sprintf(format, args...)})
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

var (
	durationType  = reflect.TypeOf(Duration(0))
	stdDuration   = reflect.TypeOf(time.Duration(0)) // capabilities.RetryPolicy's intervals
	retentionType = reflect.TypeOf(Retention{})
	thresholdType = reflect.TypeOf(Threshold{})
)

// fieldName is the key of a struct field: its yaml tag, else its json tag
// (capabilities.RetryPolicy is reused as is, with its JSON names).
func fieldName(f reflect.StructField) string {
	tag := f.Tag.Get("yaml")
	if tag == "" {
		tag = f.Tag.Get("json")
	}
	name, _, _ := strings.Cut(tag, ",")
	return name
}

// decode sets v from n. key is the dotted key of n, for problems and lines.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, key string) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	isNull := n.Kind == yaml.ScalarNode && n.Tag == "!!null"
	switch {
	case v.Type() == durationType || v.Type() == stdDuration:
		s, ok := d.scalar(n, key)
		if !ok {
			return
		}
		dur, err := parseDuration(s)
		if err != nil {
			d.add(n.Line, key, "%v", err)
			return
		}
		v.SetInt(int64(dur))
		return
	case v.Type() == thresholdType:
		s, ok := d.scalar(n, key)
		if !ok {
			return
		}
		if strings.EqualFold(s, "never") {
			v.Set(reflect.ValueOf(Threshold{Never: true}))
			return
		}
		if rest, neg := strings.CutPrefix(s, "-"); neg {
			if _, err := parseDuration(rest); err == nil {
				v.Set(reflect.ValueOf(Threshold{Never: true}))
				return
			}
		}
		dur, err := parseDuration(s)
		if err != nil {
			d.add(n.Line, key, "must be a duration such as \"30s\", 0 (the default) or \"never\", got %q", s)
			return
		}
		v.Set(reflect.ValueOf(Threshold{After: dur}))
		return
	case v.Type() == retentionType:
		s, ok := d.scalar(n, key)
		if !ok {
			return
		}
		switch strings.ToLower(s) {
		case "true":
			v.Set(reflect.ValueOf(Retention{Forever: true}))
			return
		case "false":
			v.Set(reflect.ValueOf(Retention{}))
			return
		}
		dur, err := parseDuration(s)
		if err != nil {
			d.add(n.Line, key, "must be true, false or a duration such as \"24h\", got %q", s)
			return
		}
		v.Set(reflect.ValueOf(Retention{For: dur}))
		return
	case v.Kind() == reflect.Pointer:
		if isNull {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		d.decode(n, p.Elem(), key)
		v.Set(p)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if isNull {
			return // "server:" with nothing under it keeps the defaults
		}
		if n.Kind != yaml.MappingNode {
			d.add(n.Line, key, "must be a mapping of keys, got %s", kindName(n))
			return
		}
		d.decodeStruct(n, v, key)
	case reflect.Map:
		if isNull {
			return
		}
		if n.Kind != yaml.MappingNode {
			d.add(n.Line, key, "must be a mapping, got %s", kindName(n))
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			k := kn.Value
			sub := join(key, k)
			if first, dup := seen[k]; dup {
				d.add(kn.Line, sub, "set twice (first on line %d)", first)
				continue
			}
			seen[k] = kn.Line
			d.lines[sub] = kn.Line
			elem := reflect.New(v.Type().Elem()).Elem()
			d.decode(vn, elem, sub)
			v.SetMapIndex(reflect.ValueOf(k), elem)
		}
	case reflect.Slice:
		if isNull {
			v.SetZero()
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.add(n.Line, key, "must be a list, got %s", kindName(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, en := range n.Content {
			sub := fmt.Sprintf("%s[%d]", key, i)
			d.lines[sub] = en.Line
			d.decode(en, s.Index(i), sub)
		}
		v.Set(s)
	case reflect.String:
		if s, ok := d.scalar(n, key); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		s, ok := d.scalar(n, key)
		if !ok {
			return
		}
		switch strings.ToLower(s) {
		case "true":
			v.SetBool(true)
		case "false":
			v.SetBool(false)
		default:
			d.add(n.Line, key, "must be true or false, got %q", s)
		}
	case reflect.Int, reflect.Int64:
		s, ok := d.scalar(n, key)
		if !ok {
			return
		}
		i, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
		if err != nil {
			d.add(n.Line, key, "must be a whole number, got %q", s)
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		s, ok := d.scalar(n, key)
		if !ok {
			return
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			d.add(n.Line, key, "must be a number, got %q", s)
			return
		}
		v.SetFloat(f)
	default:
		// Only reachable if a field of an unsupported type is added to Config.
		d.add(n.Line, key, "internal error: cannot decode into %s", v.Type())
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, key string) {
	t := v.Type()
	fields := map[string]int{}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if name := fieldName(f); name != "" && name != "-" {
			fields[name] = i
			names = append(names, name)
		}
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		sub := join(key, kn.Value)
		if kn.Kind != yaml.ScalarNode {
			d.add(kn.Line, key, "a key must be a plain name, got %s", kindName(kn))
			continue
		}
		if first, dup := seen[kn.Value]; dup {
			d.add(kn.Line, sub, "set twice (first on line %d)", first)
			continue
		}
		seen[kn.Value] = kn.Line
		idx, ok := fields[kn.Value]
		if to, was := renamed[sub]; !ok && was {
			d.add(kn.Line, sub, "was renamed: write %s instead (see docs/configuration.md)", join(key, to))
			continue
		}
		if !ok {
			msg := "unknown key"
			if s := suggestKey(key, kn.Value, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			} else {
				msg += " (known keys: " + strings.Join(names, ", ") + ")"
			}
			d.add(kn.Line, sub, "%s", msg)
			continue
		}
		d.lines[sub] = kn.Line
		d.decode(vn, v.Field(idx), sub)
	}
}

// renamed maps a key a former version read to its new name (the last
// part of the dotted key): a file using the old key gets an error naming
// the new one instead of "unknown key".
var renamed = map[string]string{
	"limits.max_steps": "max_node_steps",
}

// scalar returns n's value with environment variables expanded, or records
// a problem when n is not a scalar or is empty.
func (d *decoder) scalar(n *yaml.Node, key string) (string, bool) {
	if n.Kind != yaml.ScalarNode {
		d.add(n.Line, key, "must be a single value, got %s", kindName(n))
		return "", false
	}
	if n.Tag == "!!null" {
		d.add(n.Line, key, "has no value (remove the key to use the default)")
		return "", false
	}
	s, err := expand(n.Value, d.lookup)
	if err != nil {
		d.add(n.Line, key, "%v", err)
		return "", false
	}
	return s, true
}

// parseDuration accepts a Go duration string or a number of seconds, like
// capabilities.Duration's JSON form.
func parseDuration(s string) (Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("must not be negative, got %s", s)
		}
		return Duration(f * float64(time.Second)), nil
	}
	p, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("must be a duration such as \"500ms\", \"30s\", \"5m\" or a number of seconds, got %q", s)
	}
	if p < 0 {
		return 0, fmt.Errorf("must not be negative, got %s", s)
	}
	return Duration(p), nil
}

// suggestKey is suggest over the keys of the mapping at parent, where a
// renamed key's old name ("max_step" for max_steps) suggests the new one.
func suggestKey(parent, key string, names []string) string {
	old := map[string]string{}
	cands := slices.Clip(names)
	for from, to := range renamed {
		p, name := "", from
		if i := strings.LastIndex(from, "."); i >= 0 {
			p, name = from[:i], from[i+1:]
		}
		if p == parent {
			old[name] = to
			cands = append(cands, name)
		}
	}
	slices.Sort(cands[len(names):])
	s := suggest(key, cands)
	if to, ok := old[s]; ok {
		return to
	}
	return s
}

// suggest returns the known name closest to an unknown key, if it is close
// enough to be a likely typo.
func suggest(key string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		// "attempts" for "max_attempts": a shortened key is a likely mistake.
		if len(key) >= 4 && (strings.HasSuffix(n, "_"+key) || strings.HasPrefix(n, key+"_")) {
			return n
		}
		if d := typo.Distance(key, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}
