package apierror

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/capgraph/capgraph/agent"
	"github.com/capgraph/capgraph/server/internal/jsonreply"
)

// Body is the OpenAI error body, used by every route.
type Body struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// Status maps an error to its HTTP status, OpenAI type and code, and
// whether a client may retry it automatically. The only place that decides.
func Status(err error) (status int, typ, code string, retry bool) {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe), errors.Is(err, ErrBodyTooLarge):
		return http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", false
	case errors.Is(err, ErrUnauthorized):
		return http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", false
	case errors.Is(err, agent.ErrLoosen):
		// A request asked for a safety setting looser than the
		// configuration (agent.LoosenError names it).
		return http.StatusForbidden, "permission_error", "option_not_allowed", false
	case errors.Is(err, ErrQuota):
		return http.StatusForbidden, "permission_error", "quota_exceeded", false
	case errors.Is(err, ErrForbidden):
		return http.StatusForbidden, "permission_error", "forbidden", false
	case errors.Is(err, ErrCrossOrigin):
		return http.StatusForbidden, "permission_error", "cross_origin", false
	case errors.Is(err, ErrUnknownHost):
		return http.StatusMisdirectedRequest, "invalid_request_error", "unknown_host", false
	case errors.Is(err, ErrUnsupportedMediaType):
		return http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type", false
	case errors.Is(err, ErrUnknownModel):
		return http.StatusNotFound, "invalid_request_error", "model_not_found", false
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound, "invalid_request_error", "not_found", false
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest, "invalid_request_error", "invalid_request", false
	case errors.Is(err, ErrBodyTimeout):
		return http.StatusRequestTimeout, "invalid_request_error", "request_timeout", false
	case errors.Is(err, ErrMethodNotAllowed):
		return http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", false
	case errors.Is(err, ErrTooManyRuns):
		return http.StatusTooManyRequests, "rate_limit_error", "too_many_runs", true
	case errors.Is(err, ErrRateLimited):
		return http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", true
	case errors.Is(err, ErrRunInProgress), errors.Is(err, agent.ErrThreadBusy):
		// agent.ErrThreadBusy: the agent found the thread running (here, or
		// on another replica sharing the store).
		return http.StatusConflict, "invalid_request_error", "run_in_progress", false
	case errors.Is(err, ErrDuplicateInProgress):
		return http.StatusConflict, "invalid_request_error", "duplicate_in_progress", true
	case errors.Is(err, ErrConflict):
		return http.StatusConflict, "invalid_request_error", "conflict", false
	case errors.Is(err, ErrKeyReused):
		return http.StatusUnprocessableEntity, "invalid_request_error", "idempotency_key_reused", false
	case errors.Is(err, agent.ErrUnknownThread):
		return http.StatusNotFound, "invalid_request_error", "not_found", false
	case errors.Is(err, agent.ErrBadRequest):
		return http.StatusBadRequest, "invalid_request_error", "invalid_request", false
	case errors.Is(err, ErrShuttingDown):
		return http.StatusServiceUnavailable, "server_error", "shutting_down", true
	}
	return http.StatusInternalServerError, "server_error", "internal_error", false
}

// Writer answers errors in the OpenAI error shape.
type Writer struct {
	// Message is the client's message of an error (never internal
	// detail: the server logs that and gives a reference).
	Message func(error) string
	// RetryAfter is the Retry-After of a 429 that says none of its own.
	RetryAfter time.Duration
	// Now is the server's clock (a held lease's Retry-After).
	Now func() time.Time
}

// Write answers err: its status and code (Status), a message meant for
// the client, the parameter it is about. x-should-retry: false tells the
// Stainless SDKs (openai-go, openai JS) not to repeat a request whose
// repetition could repeat a side effect.
func (e Writer) Write(w http.ResponseWriter, err error) {
	status, typ, code, retry := Status(err)
	if !retry {
		w.Header().Set("x-should-retry", "false")
	}
	if status == http.StatusTooManyRequests {
		after := e.RetryAfter
		var rl *RateLimitError
		if errors.As(err, &rl) {
			after = rl.RetryAfter
		}
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds(after)))
	}
	// A thread busy on another replica: the holder's lease says when it
	// can be taken over at the latest.
	if lh := (*agent.LeaseHeldError)(nil); errors.As(err, &lh) {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds(lh.RetryAfter(e.Now()))))
	}
	b := Body{Message: e.Message(err), Type: typ, Code: &code}
	var re *RequestError
	if errors.As(err, &re) && re.Param != "" {
		b.Param = &re.Param
	} else if le := (*agent.LoosenError)(nil); errors.As(err, &le) {
		p := "options." + le.Setting
		b.Param = &p
	}
	jsonreply.JSON(w, status, map[string]any{"error": b})
}
