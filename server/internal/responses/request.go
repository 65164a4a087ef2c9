package responses

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/capgraph/capgraph/server/internal/reqbody"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/capgraph/capgraph/server/internal/apierror"
)

// The OpenAI Responses API request, decoded by hand: every top-level field
// is either used, accepted as a hint the agent has no use for (sampling,
// caching, tracing), or refused with a 400 naming it — a field that would
// change what the answer means (tools, structured output, background
// runs, conversations, store:false) is never silently dropped. The decoder
// is a pure function of the body, fuzzed by FuzzResponsesRequest.

// Request is a decoded, validated POST /v1/responses body.
type Request struct {
	Model              string
	Stream             bool
	Instructions       *string
	PreviousResponseID string
	Metadata           map[string]string
	// Items is the input; the last one is the user's new message.
	Items []Item
}

// Item is one input item: a message as text, or a reference to
// an output item of an earlier response (ID set, Ref true).
type Item struct {
	Role string // user, assistant, system or developer; "" for a reference
	Text string
	ID   string
	Ref  bool
	// Unread counts the content parts that are not text (images, files,
	// audio): the agent reads text only, and its answer says so.
	Unread int
}

// Limits bound a request (the server's max_messages and
// max_message_bytes).
type Limits struct {
	MaxItems     int
	MaxItemBytes int
}

// OpenAI's limit of a previous_response_id.
const (
	maxResponseIDLen = 512
)

// responsesIgnored are fields accepted and not used: hints for a model's
// sampling, caching or billing that an agent answering from capabilities
// has no use for (Chat Completions ignores the same).
var responsesIgnored = map[string]bool{
	"temperature": true, "top_p": true, "top_logprobs": true, "max_output_tokens": true, "max_tool_calls": true,
	"user": true, "safety_identifier": true, "prompt_cache_key": true, "prompt_cache_retention": true,
	"prompt_cache_options": true, "service_tier": true, "parallel_tool_calls": true, "truncation": true,
	"reasoning": true, "stream_options": true, "include": true,
}

// Decode decodes and validates a Responses request body. Every error is
// an *apierror.RequestError of kind ErrBadRequest naming the field.
func Decode(body []byte, lim Limits) (Request, error) {
	var req Request
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&fields); err != nil {
		return req, apierror.BadRequest("body", "invalid JSON: %v", jsonProblem(err))
	}
	if fields == nil {
		return req, apierror.BadRequest("body", "must be a JSON object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return req, apierror.BadRequest("body", "unexpected data after the JSON object")
	}
	var input json.RawMessage
	for _, name := range sortedKeys(fields) {
		if param, err := decodeField(name, fields[name], &req, &input); err != nil {
			return Request{}, apierror.BadRequest(param, "%v", err)
		}
	}
	if strings.TrimSpace(req.Model) == "" {
		return Request{}, apierror.BadRequest("model", "required")
	}
	items, err := decodeInput(input, lim)
	if err != nil {
		return Request{}, err
	}
	req.Items = items
	return req, nil
}

// decodeField decodes the request's field name (raw) into req (input is
// kept raw for decodeInput); param names the field an error is about.
func decodeField(name string, raw json.RawMessage, req *Request, input *json.RawMessage) (param string, err error) {
	switch name {
	case "model":
		err = decodeString(raw, &req.Model)
	case "input":
		*input = raw
	case "instructions":
		if !reqbody.IsNull(raw) {
			var s string
			if err = decodeString(raw, &s); err == nil {
				req.Instructions = &s
			}
		}
	case "previous_response_id":
		err = decodeString(raw, &req.PreviousResponseID)
		if err == nil && len(req.PreviousResponseID) > maxResponseIDLen {
			err = fmt.Errorf("longer than %d bytes", maxResponseIDLen)
		}
	case "stream":
		err = decodeBool(raw, &req.Stream)
	case "store":
		store := true
		if err = decodeBool(raw, &store); err == nil && !store {
			err = errors.New("false is not supported: the agent keeps every conversation in its checkpoint store " +
				"(approvals, crash recovery and the audit log need it); leave store out or set it to true")
		}
	case "background":
		var bg bool
		if err = decodeBool(raw, &bg); err == nil && bg {
			err = errors.New("background responses are not supported; use stream:true to follow a long answer")
		}
	case "metadata":
		req.Metadata, err = reqbody.DecodeMetadata(raw)
	case "tools":
		var tools []json.RawMessage
		if err = json.Unmarshal(raw, &tools); err != nil {
			err = errors.New("must be an array")
		} else if len(tools) > 0 {
			err = errors.New("client tools are not supported: the agent runs its own capabilities (send no tools)")
		}
	case "tool_choice":
		var choice string
		if !reqbody.IsNull(raw) && (json.Unmarshal(raw, &choice) != nil || (choice != "auto" && choice != "none")) {
			err = errors.New(`only "auto" or "none" is supported (the agent runs its own capabilities)`)
		}
	case "text":
		err = checkTextFormat(raw)
		if err != nil {
			name = "text.format"
		}
	case "conversation":
		if !reqbody.IsNull(raw) {
			err = errors.New("the Conversations API is not supported; continue with previous_response_id")
		}
	case "prompt":
		if !reqbody.IsNull(raw) {
			err = errors.New("prompt templates are not supported; send input")
		}
	default:
		if !responsesIgnored[name] {
			err = errors.New("unknown or unsupported field")
			name = fieldName(name)
		}
	}
	return name, err
}

// decodeInput reads "input": a string (the user's message) or an array of
// message and item_reference items ending with the user's message.
func decodeInput(raw json.RawMessage, lim Limits) ([]Item, error) {
	if len(raw) == 0 || reqbody.IsNull(raw) {
		return nil, apierror.BadRequest("input", "required")
	}
	var items []Item
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, apierror.BadRequest("input", "must be a string or an array of items")
		}
		items = []Item{{Role: "user", Text: s}}
	} else {
		var arr []json.RawMessage
		if err := json.Unmarshal(raw, &arr); err != nil {
			return nil, apierror.BadRequest("input", "must be a string or an array of items")
		}
		if len(arr) > lim.MaxItems {
			return nil, apierror.BadRequest("input", "%d items exceed the limit of %d", len(arr), lim.MaxItems)
		}
		for i, a := range arr {
			it, err := decodeItem(a, fmt.Sprintf("input[%d]", i))
			if err != nil {
				return nil, err
			}
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return nil, apierror.BadRequest("input", "at least one item is required")
	}
	for i, it := range items {
		if len(it.Text) > lim.MaxItemBytes {
			return nil, apierror.BadRequest(fmt.Sprintf("input[%d]", i), "%d bytes exceed the limit of %d", len(it.Text), lim.MaxItemBytes)
		}
	}
	last := items[len(items)-1]
	if last.Role != "user" {
		return nil, apierror.BadRequest(fmt.Sprintf("input[%d]", len(items)-1), "the last item must be the user's message")
	}
	if strings.TrimSpace(last.Text) == "" && last.Unread > 0 {
		return nil, apierror.BadRequest(fmt.Sprintf("input[%d]", len(items)-1),
			"the user's message has no text: capgraph reads only the text of a message, not images or files")
	}
	if strings.TrimSpace(last.Text) == "" {
		return nil, apierror.BadRequest(fmt.Sprintf("input[%d]", len(items)-1), "the user's message is empty")
	}
	return items, nil
}

// decodeItem reads one input item at path.
func decodeItem(raw json.RawMessage, path string) (Item, error) {
	var it struct {
		Type    *string         `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		ID      *string         `json:"id"`
	}
	if err := json.Unmarshal(raw, &it); err != nil {
		return Item{}, apierror.BadRequest(path, "must be an object with type, role and content")
	}
	typ := "message"
	if it.Type != nil {
		typ = *it.Type
	}
	var id string
	if it.ID != nil {
		id = *it.ID
		if id == "" || len(id) > maxResponseIDLen {
			return Item{}, apierror.BadRequest(path+".id", "must be a non-empty id of at most %d bytes", maxResponseIDLen)
		}
	}
	switch typ {
	case "item_reference":
		if id == "" {
			return Item{}, apierror.BadRequest(path+".id", "required")
		}
		return Item{ID: id, Ref: true}, nil
	case "message":
	default:
		return Item{}, apierror.BadRequest(path+".type", "%q items are not supported (only messages and item_reference)", typ)
	}
	switch it.Role {
	case "user", "assistant", "system", "developer":
	case "":
		return Item{}, apierror.BadRequest(path+".role", "required")
	default:
		return Item{}, apierror.BadRequest(path+".role", "unknown role %q (user, assistant, system or developer)", it.Role)
	}
	text, unread, err := itemText(it.Content, path+".content")
	if err != nil {
		return Item{}, err
	}
	return Item{Role: it.Role, Text: text, ID: id, Unread: unread}, nil
}

// itemText is a message's content as text: a string, or its text parts;
// unread counts its images, files and audio, which the agent does not read.
func itemText(raw json.RawMessage, path string) (text string, unread int, err error) {
	if len(raw) == 0 || reqbody.IsNull(raw) {
		return "", 0, apierror.BadRequest(path, "required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", 0, apierror.BadRequest(path, "must be a string or an array of content parts")
		}
		return s, 0, nil
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", 0, apierror.BadRequest(path, "must be a string or an array of content parts")
	}
	var b strings.Builder
	for j, p := range parts {
		var part struct {
			Type    string  `json:"type"`
			Text    *string `json:"text"`
			Refusal *string `json:"refusal"`
		}
		pp := fmt.Sprintf("%s[%d]", path, j)
		if err := json.Unmarshal(p, &part); err != nil {
			return "", 0, apierror.BadRequest(pp, "must be an object with type and text")
		}
		var t *string
		switch part.Type {
		case "input_text", "output_text", "text":
			t = part.Text
		case "refusal":
			t = part.Refusal
		case "input_image", "input_file", "input_audio":
			unread++
			continue
		default:
			return "", 0, apierror.BadRequest(pp+".type", "unknown content part type %q", part.Type)
		}
		if t == nil {
			return "", 0, apierror.BadRequest(pp+".text", "required")
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(*t)
	}
	return b.String(), unread, nil
}

// checkTextFormat accepts text.format {"type":"text"} (plain text, what the
// agent writes) and text.verbosity; structured output is refused.
func checkTextFormat(raw json.RawMessage) error {
	if reqbody.IsNull(raw) {
		return nil
	}
	var text struct {
		Format *struct {
			Type string `json:"type"`
		} `json:"format"`
	}
	if err := json.Unmarshal(raw, &text); err != nil {
		return errors.New("text must be an object")
	}
	if text.Format != nil && text.Format.Type != "text" {
		return fmt.Errorf("%q is not supported: the agent answers in plain text", text.Format.Type)
	}
	return nil
}

func decodeString(raw json.RawMessage, s *string) error {
	if reqbody.IsNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, s); err != nil {
		return errors.New("must be a string")
	}
	return nil
}

func decodeBool(raw json.RawMessage, b *bool) error {
	if reqbody.IsNull(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, b); err != nil {
		return errors.New("must be true or false")
	}
	return nil
}

// jsonProblem is a decoding error without Go type names.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "the body must be a JSON object"
	}
	return err.Error()
}

// sortedKeys makes the first refused field deterministic.
func sortedKeys(m map[string]json.RawMessage) []string { return slices.Sorted(maps.Keys(m)) }

// fieldName is an unknown field's name as an error's param: never empty,
// at most 64 bytes of valid UTF-8.
func fieldName(name string) string {
	name = strings.ToValidUTF8(name, "\uFFFD")
	if len(name) > 64 {
		name = strings.ToValidUTF8(name[:64], "") + "…"
	}
	if name == "" {
		return `""`
	}
	return name
}
