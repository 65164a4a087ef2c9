package killtest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/capgraph/capgraph/graph/checkpoint"
)

// Ack is a checkpoint the child acknowledged ("ACK thread step id", printed
// after Put returned) in a round.
type Ack struct {
	Thread string
	Step   int
	ID     uuid.UUID
	Round  int
}

// ParseAck reads an "ACK thread step id" line; ok is false for any other
// line, err is set for an ACK line that does not parse.
func ParseAck(line string, round int) (a Ack, ok bool, err error) {
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "ACK" {
		return Ack{}, false, nil
	}
	step, err1 := strconv.Atoi(f[2])
	id, err2 := uuid.Parse(f[3])
	if err1 != nil || err2 != nil {
		return Ack{}, true, fmt.Errorf("bad line: %s", line)
	}
	return Ack{Thread: f[1], Step: step, ID: id, Round: round}, true, nil
}

// CheckAcked fails t for every acknowledged checkpoint that store lost or
// holds with another step.
func CheckAcked(t testing.TB, store checkpoint.Store, acks []Ack) {
	t.Helper()
	for _, a := range acks {
		tu, err := store.Get(context.Background(), a.Thread, a.ID)
		if err != nil {
			t.Errorf("acknowledged checkpoint %s (thread %s step %d, round %d) is lost: %v", a.ID, a.Thread, a.Step, a.Round, err)
			continue
		}
		if tu.Checkpoint.Step != a.Step {
			t.Errorf("checkpoint %s: step %d, acknowledged as step %d", a.ID, tu.Checkpoint.Step, a.Step)
		}
	}
}
