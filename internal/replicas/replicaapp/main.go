// Command replicaapp is the application the replicas test runs three
// times: `capgraph serve` (cli.Main) with one capability, read_beam_current,
// that records each of its executions durably in the PostgreSQL table
// exec_log (key = the step's idempotency key: thread, turn, plan, step,
// attempt; the process id; when it started and ended), so the test can
// tell whether a completed step ran twice or two replicas ran one turn at
// once. A question holding "[slow]" makes the step take 30 s (a run to
// cancel).
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/capgraph/capgraph/capabilities"
	"github.com/capgraph/capgraph/cli"
	"github.com/capgraph/capgraph/config"
)

// EnvLog is the PostgreSQL URL of the database holding exec_log.
const EnvLog = "CAPGRAPH_REPLICAS_LOG"

var (
	poolOnce sync.Once
	pool     *pgxpool.Pool
	poolErr  error
)

func logPool(ctx context.Context) (*pgxpool.Pool, error) {
	poolOnce.Do(func() { pool, poolErr = pgxpool.New(ctx, os.Getenv(EnvLog)) })
	return pool, poolErr
}

func main() {
	cli.Main(cli.App{
		Name:    "capgraph",
		Summary: "capgraph replicas test application",
		Capabilities: func(*config.Config) ([]capabilities.Capability, error) {
			read := capabilities.Define(capabilities.Definition{
				Name: "read_beam_current", Description: "Read the beam current of the storage ring", Provides: []string{"BEAM_CURRENT"},
				Run: func(ctx context.Context, st capabilities.Step) (capabilities.Output, error) {
					started := time.Now()
					d := time.Duration(100+rand.IntN(400)) * time.Millisecond
					if strings.Contains(st.Task, "[slow]") {
						d = 30 * time.Second
					}
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return capabilities.Output{}, ctx.Err()
					}
					p, err := logPool(ctx)
					if err != nil {
						return capabilities.Output{}, err
					}
					if _, err := p.Exec(ctx, `INSERT INTO exec_log (key, pid, started, ended) VALUES ($1, $2, $3, clock_timestamp())`,
						st.IdempotencyKey, os.Getpid(), started); err != nil {
						return capabilities.Output{}, fmt.Errorf("exec_log: %w", err)
					}
					return capabilities.Result("BEAM_CURRENT", 401.5, "beam current is 401.5 mA"), nil
				},
			})
			return []capabilities.Capability{read}, nil
		},
	})
}
