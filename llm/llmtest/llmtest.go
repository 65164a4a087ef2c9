package llmtest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/capgraph/capgraph/llm"
)

// Reply is one scripted answer.
type Reply struct {
	// Text is the reply; for a streamed reply, empty means the chunks joined.
	Text string
	// Chunks are passed to Request.OnChunk one by one before the call returns.
	Chunks []string
	// Err, when set, fails the call. Without Chunks nothing is streamed; with
	// Chunks they are streamed first and the call fails after them (a failure
	// mid-stream, as when a provider's connection drops).
	Err error
	// Usage is reported with the reply; zero means an estimate (a token per
	// four characters of prompt and reply), so token counters move in tests.
	Usage llm.Usage
	// Finish is the reply's stop reason; empty means llm.FinishStop.
	Finish llm.FinishReason
	// Hang makes the call never answer: it returns only when its context is
	// done, with the context's error (a provider that accepted the request
	// and never replied). Everything else in the Reply is ignored.
	Hang bool
	// Delay is the model's latency: the call answers (or starts streaming)
	// after this long, or fails with the context's error if the context
	// ends first.
	Delay time.Duration
	// ChunkDelay is the time between two streamed Chunks (a model's rate
	// of tokens), so the first chunk reaches the caller before the last.
	ChunkDelay time.Duration
}

// Text is a plain text reply.
func Text(s string) Reply { return Reply{Text: s} }

// Stream is a reply streamed in chunks.
func Stream(chunks ...string) Reply { return Reply{Chunks: chunks} }

// Cut is a reply cut off by the token limit (finish reason "length"), as a
// real model's reply is when max_tokens is too small for it.
func Cut(s string) Reply { return Reply{Text: s, Finish: llm.FinishLength} }

// Hang is a call that never answers: it returns the context's error once
// the context is done. Call.CtxErr then says how it ended.
func Hang() Reply { return Reply{Hang: true} }

// Fail is a failed call.
func Fail(err error) Reply { return Reply{Err: err} }

// FailAfter streams chunks and then fails with err: a failure mid-stream.
func FailAfter(err error, chunks ...string) Reply { return Reply{Chunks: chunks, Err: err} }

// Call is one recorded call.
type Call struct {
	Role    llm.Role
	Request llm.Request
	Reply   Reply
	// Seq numbers calls from 1 in the order they started.
	Seq int
	// TimeLeft is how long the call's context had until its deadline when
	// the call started; 0 when it had no deadline.
	TimeLeft time.Duration
	// CtxErr is the call's context error when the call returned (nil while
	// it runs, or when the context was not done): context.Canceled or
	// context.DeadlineExceeded says the call was stopped by its context.
	CtxErr error
}

// Prompt returns the call's messages joined, for assertions.
func (c Call) Prompt() string { return joinMessages(c.Request.Messages) }

// Matcher selects requests.
type Matcher func(req llm.Request) bool

// PromptContains matches a request whose messages contain s.
func PromptContains(s string) Matcher {
	return func(req llm.Request) bool { return strings.Contains(joinMessages(req.Messages), s) }
}

// RoleIs matches a request of a role.
func RoleIs(r llm.Role) Matcher { return func(req llm.Request) bool { return req.Role == r } }

// All matches when every matcher does.
func All(ms ...Matcher) Matcher {
	return func(req llm.Request) bool {
		for _, m := range ms {
			if !m(req) {
				return false
			}
		}
		return true
	}
}

type rule struct {
	match Matcher
	reply func(llm.Request) Reply
}

// ErrExhausted is the kind of *ExhaustedError.
var ErrExhausted = errors.New("llmtest: script exhausted")

// ExhaustedError: a call arrived with no scripted reply left for its role.
type ExhaustedError struct {
	Role llm.Role
	Seq  int
	// LastUser is the start of the request's last user message.
	LastUser string
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("llmtest: no scripted reply for role %q (call %d); add one with Script(%q, ...) or On(...); last user message: %q",
		e.Role, e.Seq, e.Role, e.LastUser)
}
func (e *ExhaustedError) Unwrap() error { return ErrExhausted }

// Model is the scripted fake. It implements llm.Model and llm.Models.
type Model struct {
	// mu is read-locked by For, which every node calls to learn whether
	// its role is scripted: under load, a node asking must not wait for
	// another node's call to pick its reply.
	mu      sync.RWMutex
	scripts map[llm.Role][]Reply
	anyRole []Reply
	rules   []rule
	calls   []Call
	count   int  // calls made, also those not logged
	noLog   bool // see NoLog
	only    map[llm.Role]bool
	// cache holds the latest prompts when CachePrompts is on.
	cache   []string
	caching bool
}

// New returns a Model with no script: every call fails with an
// *ExhaustedError until replies are scripted.
func New() *Model { return &Model{scripts: map[llm.Role][]Reply{}} }

// Script queues replies for one role, used in order.
func (m *Model) Script(role llm.Role, replies ...Reply) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.scripts[role] = append(m.scripts[role], replies...)
	return m
}

// ScriptAny queues replies for calls of any role that has no script of its own left.
func (m *Model) ScriptAny(replies ...Reply) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.anyRole = append(m.anyRole, replies...)
	return m
}

// On answers every matching call with reply(req), before any script. Rules
// are tried in the order added. Use it for concurrent calls whose order is
// not fixed (the per-capability classifier).
func (m *Model) On(match Matcher, reply func(req llm.Request) Reply) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rules = append(m.rules, rule{match, reply})
	return m
}

// Only makes For report false for roles not listed, so those nodes run
// offline. Without Only, For reports true for every role.
func (m *Model) Only(roles ...llm.Role) *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.only = map[llm.Role]bool{}
	for _, r := range roles {
		m.only[r] = true
	}
	return m
}

// NoLog stops the call log: calls are counted (Count) but not kept, so
// Calls and CallsFor report none made afterwards. For benchmarks and load
// generators, which make calls by the million.
func (m *Model) NoLog() *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noLog = true
	return m
}

// Prompt caching as CachePrompts simulates it: OpenAI's rule, a prefix of
// at least cacheMinTokens tokens counted in steps of cacheStepTokens, over
// the last cachedPrompts prompts.
const (
	cacheMinTokens  = 1024
	cacheStepTokens = 128
	cachedPrompts   = 64
)

// CachePrompts makes the estimated usage of a reply (Reply.Usage zero)
// report cached prompt tokens as a provider with automatic prompt caching
// does (OpenAI: the longest prefix the prompt shares with a recent one, at
// least 1024 tokens, in steps of 128; a token per four characters), so a
// benchmark shows what a prompt's stable prefix saves.
func (m *Model) CachePrompts() *Model {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.caching = true
	return m
}

// cachedTokens is the prompt's prefix a recent prompt shares, in tokens
// (see CachePrompts); it remembers the prompt. Called with m.mu held.
func (m *Model) cachedTokens(prompt string) int {
	best := 0
	for _, p := range m.cache {
		n := 0
		for n < len(p) && n < len(prompt) && p[n] == prompt[n] {
			n++
		}
		best = max(best, n)
	}
	if len(m.cache) == cachedPrompts {
		m.cache = append(m.cache[:0], m.cache[1:]...)
	}
	m.cache = append(m.cache, prompt)
	tokens := best / 4
	if tokens < cacheMinTokens {
		return 0
	}
	return tokens - tokens%cacheStepTokens
}

// For implements llm.Models: the returned model records the role on calls
// that do not set one.
func (m *Model) For(role llm.Role) (llm.Model, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.only != nil && !m.only[role] {
		return nil, false
	}
	return roleModel{m, role}, true
}

type roleModel struct {
	m    *Model
	role llm.Role
}

func (r roleModel) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	if req.Role == "" {
		req.Role = r.role
	}
	return r.m.Generate(ctx, req)
}

// Cancelable implements llm.Cancelable: a call, a Hang's included, returns
// once its context ends.
func (m *Model) Cancelable() bool { return true }

// Cancelable implements llm.Cancelable.
func (r roleModel) Cancelable() bool { return true }

// Generate answers from the rules, then the role's script, then the any-role
// script. It honours a canceled context like a real provider.
func (m *Model) Generate(ctx context.Context, req llm.Request) (llm.Response, error) {
	m.mu.Lock()
	m.count++
	seq := m.count
	reply, ok := m.next(req)
	if !ok {
		reply = Reply{Err: &ExhaustedError{Role: req.Role, Seq: seq, LastUser: lastUser(req.Messages)}}
	}
	cached := 0
	if m.caching && reply.Usage == (llm.Usage{}) && reply.Err == nil && !reply.Hang {
		cached = m.cachedTokens(joinMessages(req.Messages))
	}
	if !m.noLog {
		call := Call{Role: req.Role, Request: req, Reply: reply, Seq: seq}
		if d, ok := ctx.Deadline(); ok {
			call.TimeLeft = max(time.Until(d), time.Nanosecond)
		}
		m.calls = append(m.calls, call)
		i := len(m.calls) - 1
		defer func() {
			m.mu.Lock()
			m.calls[i].CtxErr = ctx.Err()
			m.mu.Unlock()
		}()
	}
	m.mu.Unlock()

	if err := ctx.Err(); err != nil {
		return llm.Response{}, err
	}
	if reply.Hang {
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	}
	if err := sleep(ctx, reply.Delay); err != nil {
		return llm.Response{}, err
	}
	if reply.Err != nil {
		if req.OnChunk != nil {
			for _, c := range reply.Chunks {
				if err := req.OnChunk(ctx, c); err != nil {
					return llm.Response{}, fmt.Errorf("llmtest: streaming func returned an error: %w", err)
				}
			}
		}
		return llm.Response{}, reply.Err
	}
	text := reply.Text
	if len(reply.Chunks) > 0 {
		if text == "" {
			text = strings.Join(reply.Chunks, "")
		}
		if req.OnChunk != nil {
			for i, c := range reply.Chunks {
				if i > 0 && reply.ChunkDelay > 0 {
					if err := sleep(ctx, reply.ChunkDelay); err != nil {
						return llm.Response{}, err
					}
				}
				if err := req.OnChunk(ctx, c); err != nil {
					return llm.Response{}, fmt.Errorf("llmtest: streaming func returned an error: %w", err)
				}
			}
		}
	} else if req.OnChunk != nil && text != "" {
		if err := req.OnChunk(ctx, text); err != nil {
			return llm.Response{}, fmt.Errorf("llmtest: streaming func returned an error: %w", err)
		}
	}
	usage := reply.Usage
	if usage == (llm.Usage{}) {
		usage = llm.Usage{PromptTokens: (joinedLen(req.Messages) + 3) / 4, CompletionTokens: (len(text) + 3) / 4, CachedPromptTokens: cached}
	}
	finish := reply.Finish
	if finish == "" {
		finish = llm.FinishStop
	}
	maxTok := req.MaxTokens
	if maxTok == 0 {
		maxTok = req.DefaultMaxTokens
	}
	return llm.Response{Text: text, Usage: usage, Model: "llmtest", FinishReason: finish, MaxTokens: maxTok}, nil
}

// sleep waits d, or returns the context's error if it ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Model) next(req llm.Request) (Reply, bool) {
	for _, r := range m.rules {
		if r.match(req) {
			return r.reply(req), true
		}
	}
	if q := m.scripts[req.Role]; len(q) > 0 {
		m.scripts[req.Role] = q[1:]
		return q[0], true
	}
	if len(m.anyRole) > 0 {
		r := m.anyRole[0]
		m.anyRole = m.anyRole[1:]
		return r, true
	}
	return Reply{}, false
}

// Calls returns the call log, in start order.
func (m *Model) Calls() []Call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Call(nil), m.calls...)
}

// CallsFor returns the calls of one role.
func (m *Model) CallsFor(role llm.Role) []Call {
	var out []Call
	for _, c := range m.Calls() {
		if c.Role == role {
			out = append(out, c)
		}
	}
	return out
}

// Count returns the number of calls made (also while NoLog).
func (m *Model) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count
}

// Remaining returns how many scripted replies are unused (rules excluded),
// so a test can check its script was consumed.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.anyRole)
	for _, q := range m.scripts {
		n += len(q)
	}
	return n
}

// joinedLen is len(joinMessages(msgs)), without joining them.
func joinedLen(msgs []llm.Message) int {
	n := max(len(msgs)-1, 0)
	for _, m := range msgs {
		n += len(m.Content)
	}
	return n
}

func joinMessages(msgs []llm.Message) string {
	var b strings.Builder
	for i, msg := range msgs {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(msg.Content)
	}
	return b.String()
}

func lastUser(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			s := msgs[i].Content
			if len(s) > 80 {
				s = s[:80] + "…"
			}
			return s
		}
	}
	return ""
}
