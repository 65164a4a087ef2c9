package sqlrow

// Rows is what both database/sql's *Rows and pgx.Rows offer for reading a
// result; the caller closes them.
type Rows interface {
	Next() bool
	Err() error
}

// Collect reads every row with scan, which reads the current row; it stops at
// scan's first error and returns it as it is. A failure of the iteration
// itself is returned wrapped by iterErr.
func Collect[T any](rows Rows, scan func() (T, error), iterErr func(error) error) ([]T, error) {
	var out []T
	for rows.Next() {
		v, err := scan()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, iterErr(err)
	}
	return out, nil
}
