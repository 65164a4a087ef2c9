package capabilities_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "slow" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestDefaultClassify(t *testing.T) {
	C := capabilities.Critical
	R := capabilities.Retriable
	tests := []struct {
		name       string
		err        error
		severity   capabilities.Severity
		kind       string
		retryAfter time.Duration
	}{
		{"nil", nil, C, capabilities.KindUnknown, 0},
		{"plain error", errors.New("boom"), C, capabilities.KindUnknown, 0},
		{"stated by *Error", capabilities.NewError(capabilities.Replanning, capabilities.KindNotFound, "no such channel", nil), capabilities.Replanning, capabilities.KindNotFound, 0},
		{"wrapped *Error", fmt.Errorf("step: %w", capabilities.NewError(capabilities.Reclassification, "", "wrong tool", nil)), capabilities.Reclassification, capabilities.KindUnknown, 0},
		{"*Error without severity keeps its kind", &capabilities.Error{Kind: capabilities.KindRateLimit, Err: errors.New("x")}, R, capabilities.KindRateLimit, 0},
		{"deadline exceeded", fmt.Errorf("read: %w", context.DeadlineExceeded), R, capabilities.KindTimeout, 0},
		{"os deadline", fmt.Errorf("read: %w", os.ErrDeadlineExceeded), R, capabilities.KindTimeout, 0},
		{"net timeout", &net.OpError{Op: "read", Net: "tcp", Err: timeoutErr{}}, R, capabilities.KindTimeout, 0},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, R, capabilities.KindConnection, 0},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), R, capabilities.KindConnection, 0},
		{"HTTP 429 with Retry-After", &capabilities.StatusError{Code: 429, Delay: 7 * time.Second}, R, capabilities.KindRateLimit, 7 * time.Second},
		{"HTTP 502", &capabilities.StatusError{Code: 502}, R, capabilities.KindServerError, 0},
		{"HTTP 503 with Retry-After", fmt.Errorf("archiver: %w", &capabilities.StatusError{Code: 503, Delay: time.Second}), R, capabilities.KindServerError, time.Second},
		{"HTTP 504", &capabilities.StatusError{Code: 504}, R, capabilities.KindServerError, 0},
		{"HTTP 500", &capabilities.StatusError{Code: 500}, C, capabilities.KindUnknown, 0},
		{"HTTP 404", &capabilities.StatusError{Code: 404}, C, capabilities.KindNotFound, 0},
		{"HTTP 401", &capabilities.StatusError{Code: 401}, C, capabilities.KindAuth, 0},
		{"panic", &capabilities.PanicError{Value: "nil map"}, C, capabilities.KindPanic, 0},
		{"resource exhausted", fmt.Errorf("write: %w", capabilities.ErrResourceExhausted), C, capabilities.KindResourceExhausted, 0},
		{"writes disabled", capabilities.ErrWritesDisabled, C, capabilities.KindWritesDisabled, 0},
		{"missing input", fmt.Errorf("%w: PV.x", capabilities.ErrMissingInput), capabilities.Replanning, capabilities.KindMissingInput, 0},
		{"flattened text only", errors.New("Post http://x: dial tcp: connection refused"), R, capabilities.KindConnection, 0},
		{"flattened 429 text", errors.New("API returned unexpected status code: 429"), R, capabilities.KindRateLimit, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := capabilities.DefaultClassify(tc.err)
			if cl.Severity != tc.severity || cl.Kind != tc.kind || cl.RetryAfter.D() != tc.retryAfter {
				t.Fatalf("got %s/%s/%s, want %s/%s/%s", cl.Severity, cl.Kind, cl.RetryAfter, tc.severity, tc.kind, tc.retryAfter)
			}
			if cl.UserMessage == "" {
				t.Fatal("no user message")
			}
			if tc.err != nil && cl.Metadata[capabilities.MetaTechnicalDetails] != tc.err.Error() {
				t.Fatalf("technical details %v", cl.Metadata)
			}
		})
	}
}

// The text of an untyped error gives its kind only for a fixed table of
// phrases (for libraries that flatten errors to strings).
func TestKindFromText(t *testing.T) {
	tests := []struct {
		msg  string
		kind string
		ok   bool
	}{
		{"dial tcp 10.0.0.1:5064: connect: connection refused", capabilities.KindConnection, true},
		{"read: Connection Reset By Peer", capabilities.KindConnection, true},
		{"write: broken pipe", capabilities.KindConnection, true},
		{"lookup archiver: no such host", capabilities.KindConnection, true},
		{"net/http: i/o timeout", capabilities.KindTimeout, true},
		{"context deadline exceeded", capabilities.KindTimeout, true},
		{"status code: 429", capabilities.KindRateLimit, true},
		{"429 Too Many Requests", capabilities.KindRateLimit, true},
		{"status code 503", capabilities.KindServerError, true},
		{"502 Bad Gateway", capabilities.KindServerError, true},
		{"503 Service Unavailable", capabilities.KindServerError, true},
		{"504 Gateway Timeout", capabilities.KindTimeout, true},
		{"channel SR:CURRENT not found", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		want := tc.kind
		if !tc.ok {
			want = capabilities.KindUnknown
		}
		if kind := capabilities.DefaultClassify(errors.New(tc.msg)).Kind; kind != want {
			t.Errorf("the kind of %q is %q, want %q", tc.msg, kind, want)
		}
	}
}

type ownClassifier struct {
	capabilities.Capability
	sev capabilities.Severity
}

func (o ownClassifier) ClassifyError(err error, ec capabilities.ErrorContext) capabilities.Classification {
	return capabilities.Classification{Severity: o.sev, UserMessage: "own: " + ec.Capability}
}

func TestClassifyPrefersTheCapability(t *testing.T) {
	err := fmt.Errorf("x: %w", context.DeadlineExceeded)
	ec := capabilities.ErrorContext{Capability: "read"}
	if cl := capabilities.Classify(ownClassifier{sev: capabilities.Replanning}, err, ec); cl.Severity != capabilities.Replanning || cl.UserMessage != "own: read" || cl.Kind != capabilities.KindTimeout {
		t.Fatalf("own classification not used: %+v", cl)
	}
	// SeverityUnset defers to the default classifier.
	if cl := capabilities.Classify(ownClassifier{}, err, ec); cl.Severity != capabilities.Retriable {
		t.Fatalf("did not defer: %+v", cl)
	}
	// Something that classifies nothing gets the default.
	if cl := capabilities.Classify(nil, err, ec); cl.Severity != capabilities.Retriable {
		t.Fatalf("nil classifier: %+v", cl)
	}
}

func TestFormatForLLM(t *testing.T) {
	cl := capabilities.Classification{Severity: capabilities.Replanning, UserMessage: "channel not found",
		RetryAfter: capabilities.Duration(2 * time.Second),
		Metadata:   map[string]any{capabilities.MetaSuggestions: []string{"check the name", "use the finder"}, capabilities.MetaReplanningReason: "unknown PV"}}
	want := "**Previous Execution Error:**\n- **Severity:** replanning\n- **User Message:** channel not found\n- **Retry After:** 2s\n- **Replanning Reason:** unknown PV\n- **Suggestions:** check the name, use the finder"
	if got := cl.FormatForLLM(); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// An error's text joins its message and its cause with one colon, whatever
// punctuation ends the message ("…(attempt 3): sensor…", never "…(attempt
// 3).: sensor…").
func TestErrorTextJoinsMessageAndCause(t *testing.T) {
	cause := errors.New("sensor did not answer in time")
	for msg, want := range map[string]string{
		"The dead sensor timed out (attempt 3).": "The dead sensor timed out (attempt 3): sensor did not answer in time",
		"The dead sensor timed out":              "The dead sensor timed out: sensor did not answer in time",
	} {
		if got := capabilities.NewError(capabilities.Retriable, capabilities.KindTimeout, msg, cause).Error(); got != want {
			t.Errorf("%q: got %q, want %q", msg, got, want)
		}
	}
}
