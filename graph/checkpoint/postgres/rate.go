package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capgraph/capgraph/runstore"
)

var _ runstore.RateCounter = (*Store)(nil)

// TakeToken takes a token from key's bucket in one statement: the refill
// since the bucket's time is computed on the database's clock, and the row
// is updated only when a token is there, so replicas taking at once never
// take the same token.
func (s *Store) TakeToken(ctx context.Context, key string, perMinute int) (bool, time.Duration, error) {
	if perMinute <= 0 {
		return true, 0, nil
	}
	level := `least($2::float8, b.tokens + extract(epoch FROM now() - b.at) / 60 * $2::float8)`
	var left float64
	err := s.pool.QueryRow(ctx, s.expand(`INSERT INTO {{rate_buckets}} AS b (key, tokens, at) VALUES ($1, $2::float8 - 1, now())
		ON CONFLICT (key) DO UPDATE SET tokens = `+level+` - 1, at = now()
		WHERE `+level+` >= 1
		RETURNING tokens`), key, perMinute).Scan(&left)
	if err == nil {
		return true, 0, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return false, 0, fmt.Errorf("postgres: take a rate token: %w", err)
	}
	var have float64
	if err := s.pool.QueryRow(ctx, s.expand(`SELECT `+level+` FROM {{rate_buckets}} b WHERE key = $1`), key, perMinute).Scan(&have); err != nil {
		return false, 0, fmt.Errorf("postgres: read a rate bucket: %w", err)
	}
	return false, time.Duration((1 - have) / float64(perMinute) * float64(time.Minute)), nil
}
