package intent

import "sync"

// memoSize bounds the remembered findings: enough for the messages of the
// turns in flight on a busy server, small beside them (a finding is a few
// hundred bytes; a message at most MaxChangeMessage is kept as its key).
const memoSize = 4096

// findings remembers FromMessage's recent answers. A message longer than
// MaxChangeMessage is not remembered: its finding is cheap, its key is not.
var findings = memo{m: make(map[string]Finding, 64)}

// memo is a bounded map of findings; when full it starts again empty,
// which costs one miss per message and needs no bookkeeping per hit.
type memo struct {
	mu sync.Mutex
	m  map[string]Finding
}

// get returns a copy of the finding remembered for msg.
func (c *memo) get(msg string) (Finding, bool) {
	c.mu.Lock()
	f, ok := c.m[msg]
	c.mu.Unlock()
	if !ok {
		return Finding{}, false
	}
	return f.clone(), true
}

// put remembers f for msg; f must not be changed afterwards (FromMessage
// hands its callers clones).
func (c *memo) put(msg string, f Finding) {
	if len(msg) > MaxChangeMessage {
		return
	}
	c.mu.Lock()
	if len(c.m) >= memoSize {
		clear(c.m)
	}
	c.m[msg] = f
	c.mu.Unlock()
}

// clone returns f with nothing shared: callers change what they get
// (FromMessages fills in Refers).
func (f Finding) clone() Finding {
	if f.Intent.Changes == nil {
		return f
	}
	cs := make([]RequestedChange, len(f.Intent.Changes))
	for i, c := range f.Intent.Changes {
		c.Value, c.By = clonePtr(c.Value), clonePtr(c.By)
		cs[i] = c
	}
	f.Intent.Changes = cs
	return f
}

func clonePtr(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
