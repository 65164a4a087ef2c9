package responses

import (
	"sync"

	"github.com/capgraph/capgraph/agent"
)

// KeepResponses bounds the response objects a Store keeps for GET.
const KeepResponses = 1024

// Object is the Responses API's response.
type Object struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	CompletedAt        *int64            `json:"completed_at"`
	Error              *ObjectError      `json:"error"`
	IncompleteDetails  *struct{}         `json:"incomplete_details"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int              `json:"max_output_tokens"`
	Model              string            `json:"model"`
	Output             []OutputItem      `json:"output"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Store              bool              `json:"store"`
	Temperature        float64           `json:"temperature"`
	TopP               float64           `json:"top_p"`
	ToolChoice         string            `json:"tool_choice"`
	Tools              []struct{}        `json:"tools"`
	Text               TextConfig        `json:"text"`
	Truncation         string            `json:"truncation"`
	Background         bool              `json:"background"`
	Usage              *Usage            `json:"usage"`
	User               *string           `json:"user"`
	Metadata           map[string]string `json:"metadata"`
}

// ObjectError is a failed response's error.
type ObjectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// TextConfig is the response's text format (always text).
type TextConfig struct {
	Format struct {
		Type string `json:"type"`
	} `json:"format"`
}

// OutputItem is an item of the response's output: the answer's message.
type OutputItem struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []OutputPart `json:"content"`
}

// OutputPart is a part of an output message: its text.
type OutputPart struct {
	Type        string     `json:"type"`
	Text        string     `json:"text"`
	Annotations []struct{} `json:"annotations"`
	Logprobs    []struct{} `json:"logprobs"`
}

// Usage is the response's token usage.
type Usage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int `json:"total_tokens"`
}

// UsageOf is the agent's usage as a response's.
func UsageOf(u agent.Usage) *Usage {
	return &Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

// TextPart is an output text part.
func TextPart(text string) OutputPart {
	return OutputPart{Type: "output_text", Text: text, Annotations: []struct{}{}, Logprobs: []struct{}{}}
}

// Store keeps this process's response objects for GET (the newest
// KeepResponses) and the latest response of each thread, so an old
// previous_response_id (a branch, or a retried request whose run already
// went on) is refused instead of continuing the thread as it stands now.
type Store struct {
	mu     sync.Mutex
	objs   map[string]storedObject
	order  []string
	latest map[string]string // internal thread → response id
}

type storedObject struct {
	owner  string
	thread string
	obj    Object
}

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{objs: map[string]storedObject{}, latest: map[string]string{}}
}

// Put keeps obj, owner's, as the latest response of the internal
// thread, dropping the oldest beyond KeepResponses.
func (rs *Store) Put(owner, thread string, obj Object) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, ok := rs.objs[obj.ID]; !ok {
		rs.order = append(rs.order, obj.ID)
		rs.latest[thread] = obj.ID
	}
	rs.objs[obj.ID] = storedObject{owner: owner, thread: thread, obj: obj}
	for len(rs.order) > KeepResponses {
		old := rs.objs[rs.order[0]]
		if rs.latest[old.thread] == rs.order[0] {
			delete(rs.latest, old.thread)
		}
		delete(rs.objs, rs.order[0])
		rs.order = rs.order[1:]
	}
}

// Get returns owner's response id.
func (rs *Store) Get(owner, id string) (Object, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.objs[id]
	if !ok || r.owner != owner {
		return Object{}, false
	}
	return r.obj, true
}

// LatestOf returns the newest response of an internal thread, if this
// process knows it.
func (rs *Store) LatestOf(thread string) (string, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	id, ok := rs.latest[thread]
	return id, ok
}
