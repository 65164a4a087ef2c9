package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// stmtSpec is a statement to prepare on db into *dst.
type stmtSpec struct {
	dst **sql.Stmt
	db  *sql.DB
	sql string
}

// prepareAll prepares every spec, or none: on an error it closes those it
// prepared. what names the statements in the error.
func prepareAll(ctx context.Context, what string, specs ...stmtSpec) error {
	for i, p := range specs {
		st, err := p.db.PrepareContext(ctx, p.sql)
		if err != nil {
			for _, q := range specs[:i] {
				(*q.dst).Close() //nolint:errcheck // the prepare error says more
				*q.dst = nil
			}
			return fmt.Errorf("sqlite: prepare %s: %w", what, err)
		}
		*p.dst = st
	}
	return nil
}

// closeAll closes the statements that were prepared.
func closeAll(sts ...*sql.Stmt) error {
	var errs []error
	for _, st := range sts {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}
