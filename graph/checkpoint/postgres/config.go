package postgres

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrInvalidConfig is the kind of every error New returns for a bad Config.
var ErrInvalidConfig = errors.New("postgres: invalid config")

// Config configures a Store.
type Config struct {
	// DSN is a PostgreSQL URL or key=value connection string
	// (postgres://user:pass@host:5432/db?sslmode=disable). Required.
	DSN string
	// Schema, when set, holds the store's tables; it is created if missing.
	// Empty uses the connection's search_path.
	Schema string
	// MaxConns caps the pool. Default: pgxpool's (4 or the number of CPUs).
	MaxConns int32
}

func (c Config) poolConfig() (*pgxpool.Config, error) {
	if c.DSN == "" {
		return nil, fmt.Errorf("%w: DSN is empty", ErrInvalidConfig)
	}
	if c.MaxConns < 0 {
		return nil, fmt.Errorf("%w: MaxConns %d is negative", ErrInvalidConfig, c.MaxConns)
	}
	pc, err := pgxpool.ParseConfig(c.DSN)
	if err != nil {
		// pgx leaves the password out of its parse errors.
		return nil, fmt.Errorf("%w: DSN: %w", ErrInvalidConfig, err)
	}
	if c.MaxConns > 0 {
		pc.MaxConns = c.MaxConns
	}
	return pc, nil
}

// table returns the quoted, schema-qualified name of a table.
func (c Config) table(name string) string {
	if c.Schema == "" {
		return pgx.Identifier{name}.Sanitize()
	}
	return pgx.Identifier{c.Schema, name}.Sanitize()
}
