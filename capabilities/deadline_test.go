package capabilities_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/capgraph/capgraph/capabilities"
)

// A deadline error is a timeout, RETRIABLE, whatever the capability
// returned when cancelled; it still matches both errors.
func TestDeadlineErrorClassification(t *testing.T) {
	own := errors.New("driver: request aborted")
	err := &capabilities.DeadlineError{Capability: "read", Deadline: 30 * time.Second, Err: own}
	cl := capabilities.DefaultClassify(err)
	if cl.Severity != capabilities.Retriable || cl.Kind != capabilities.KindTimeout {
		t.Fatalf("classified %+v, want retriable timeout", cl)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, own) {
		t.Fatal("the deadline error does not match context.DeadlineExceeded and the capability's error")
	}
	ab := &capabilities.DeadlineError{Capability: "read", Deadline: 30 * time.Second, Abandoned: true}
	if got := ab.Error(); got != "read did not finish within its deadline of 30s; it did not stop when cancelled and was abandoned" {
		t.Fatalf("%q", got)
	}
}
