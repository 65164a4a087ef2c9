package server

import (
	"context"
	"slices"
	"strings"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/graph/checkpoint"
	"github.com/capgraph/capgraph/state"
)

// Threads outlive the server: the agent stores the turn's metadata with
// every checkpoint, and the server writes who owns the thread and the
// client's id for it there (turnMetadata). Listing and finding a thread
// read the checkpoint store through a ThreadLister, so after a restart a
// client finds its threads without registering them again. The in-memory
// index (threadStore) only adds what the store cannot know yet: threads
// created but never run, and the status of runs of this process.

// ThreadLister lists threads of the agent's checkpoint store by metadata.
// *agent.Agent implements it.
type ThreadLister interface {
	Threads(ctx context.Context, filter checkpoint.ThreadFilter) ([]checkpoint.ThreadInfo, error)
}

// Metadata keys the server writes with every turn (agent.TurnRequest.Metadata).
const (
	MetaOwner  = agent.MetaOwner  // the principal's name
	MetaTenant = agent.MetaTenant // the principal's tenant
	MetaUser   = agent.MetaUser   // the end user a trusted frontend forwarded ("" when none)
	MetaSource = "source"         // openai, native or agui
	MetaThread = "thread"         // the client's id of the thread
	// MetaClientPrefix prefixes the metadata a client gave the thread
	// (POST /api/threads {"metadata"}).
	MetaClientPrefix = "meta."
)

// ownerFilter matches the metadata of c's threads.
func ownerFilter(c caller) map[string]string {
	return map[string]string{MetaTenant: c.Principal.Tenant, MetaOwner: c.Principal.Name, MetaUser: c.User}
}

// turnMetadata is stored with the thread's checkpoints: who owns it, the
// client's id for it, and the client's metadata.
func (s *Server) turnMetadata(c caller, source, clientThread string, clientMeta map[string]string) map[string]string {
	m := ownerFilter(c)
	m[MetaSource], m[MetaThread] = source, clientThread
	for k, v := range clientMeta {
		m[MetaClientPrefix+k] = v
	}
	return m
}

// threadFromInfo is a stored thread as the native API shows it, if it is
// c's: its id must derive from c and the client id in its metadata, so
// metadata alone can never hand c another principal's thread.
func threadFromInfo(c caller, info checkpoint.ThreadInfo) (Thread, bool) {
	id := info.Metadata[MetaThread]
	if id == "" || internalThreadID(c, id) != info.ThreadID {
		return Thread{}, false
	}
	th := Thread{ID: id, Created: info.Created, Updated: info.Updated, internal: info.ThreadID, owner: ownerKey(c)}
	for k, v := range info.Metadata {
		if name, ok := strings.CutPrefix(k, MetaClientPrefix); ok {
			if th.Metadata == nil {
				th.Metadata = map[string]string{}
			}
			th.Metadata[name] = v
		}
	}
	return th, true
}

// findThread returns c's thread with the client id: from the index, else
// from the checkpoint store (remembered in the index from then on).
func (s *Server) findThread(ctx context.Context, c caller, id string) (Thread, bool, error) {
	if th, ok := s.threads.get(c, id); ok {
		return th, true, nil
	}
	if s.lister == nil {
		return Thread{}, false, nil
	}
	f := ownerFilter(c)
	f[MetaThread] = id
	infos, err := s.lister.Threads(ctx, checkpoint.ThreadFilter{Metadata: f})
	if err != nil {
		return Thread{}, false, err
	}
	for _, info := range infos {
		if th, ok := threadFromInfo(c, info); ok {
			return s.threads.remember(th), true, nil
		}
	}
	return Thread{}, false, nil
}

// openThread finds c's thread or creates it; created reports a new one.
func (s *Server) openThread(ctx context.Context, c caller, id string, meta map[string]string) (th Thread, created bool, err error) {
	if _, found, err := s.findThread(ctx, c, id); err != nil {
		return Thread{}, false, err
	} else if found {
		th, _ = s.threads.touch(c, id, meta, s.cfg.Now())
		return th, false, nil
	}
	th, created = s.threads.touch(c, id, meta, s.cfg.Now())
	return th, created, nil
}

// listThreads returns c's threads, newest first: the store's and the
// index's, merged.
func (s *Server) listThreads(ctx context.Context, c caller) ([]Thread, error) {
	out := s.threads.list(c)
	if s.lister == nil {
		return out, nil
	}
	infos, err := s.lister.Threads(ctx, checkpoint.ThreadFilter{Metadata: ownerFilter(c)})
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	for i, th := range out {
		at[th.internal] = i
	}
	for _, info := range infos {
		th, ok := threadFromInfo(c, info)
		if !ok {
			continue
		}
		i, seen := at[th.internal]
		if !seen {
			at[th.internal] = len(out)
			out = append(out, th)
			continue
		}
		if th.Created.Before(out[i].Created) {
			out[i].Created = th.Created
		}
		if th.Updated.After(out[i].Updated) {
			out[i].Updated = th.Updated
		}
		if out[i].Metadata == nil {
			out[i].Metadata = th.Metadata
		}
	}
	slices.SortFunc(out, func(a, b Thread) int { return b.Updated.Compare(a.Updated) })
	return out, nil
}

// turnRequest is the agent request of a turn c starts on an internal
// thread: who asks (By), what the key may do (allowed capabilities, the
// settings it may raise) and the options asked for.
func (s *Server) turnRequest(c caller, thread, input string, opts *agent.TurnOptions, meta map[string]string) agent.TurnRequest {
	return agent.TurnRequest{Thread: thread, Input: input, Options: opts, Metadata: meta, AllowedCapabilities: allowedCapabilities(c),
		MayRaise: c.Principal.MayRaise, By: callerName(c)}
}

// turnChecker is implemented by *agent.Agent: the options a turn would run
// with, or the *agent.LoosenError of a request that loosens them.
type turnChecker interface {
	TurnOptions(req agent.TurnRequest) (state.Options, error)
}

// checkTurn refuses a turn whose options the agent would refuse, before
// any run starts: the caller gets the error (403 for a loosening option)
// instead of a run that fails.
func (s *Server) checkTurn(req agent.TurnRequest) error {
	if tc, ok := s.cfg.Runner.(turnChecker); ok {
		_, err := tc.TurnOptions(req)
		return err
	}
	return nil
}

// callerName names c in approvals and audit records: the principal, and
// the end user a trusted frontend forwarded.
func callerName(c caller) string {
	if c.User != "" {
		return c.Principal.Name + "/" + c.User
	}
	return c.Principal.Name
}
