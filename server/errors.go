package server

import (
	"fmt"

	"github.com/capgraph/capgraph/server/internal/apierror"
)

// ConfigError names a bad Config field.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("server config: %s: %s", e.Field, e.Reason) }

func badRequest(param, format string, args ...any) error {
	return apierror.BadRequest(param, format, args...)
}
