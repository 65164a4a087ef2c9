package turns

import "net/http"

// HeaderReplayed marks an answer given from the first request's run.
const HeaderReplayed = "Idempotent-Replayed"

// HeaderRetryCount is sent by the Stainless SDKs (openai-go, the openai
// npm and Python packages) on every attempt, the first ("0") included:
// the request comes from a client that repeats it when its connection
// drops or times out.
const HeaderRetryCount = "X-Stainless-Retry-Count"

// Repeatable reports whether the client may send r again after leaving:
// it named the request with an Idempotency-Key, or it is an SDK that
// retries. Such a client's run outlives its leaving by
// Config.DetachGrace, for the repeat to join it (Run.Leave); any other
// client leaving (Open WebUI's stop button closes the connection) stops
// its run at once.
func Repeatable(r *http.Request) bool {
	return r.Header.Get("Idempotency-Key") != "" || r.Header.Get(HeaderRetryCount) != ""
}
