package otlp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
)

// Protocols.
const (
	ProtocolGRPC = "grpc"
	ProtocolHTTP = "http/protobuf"
)

// DefaultProtocol is the protocol when neither Config nor the environment
// names one (the OpenTelemetry specification's default is http/protobuf;
// gRPC is what collectors listen on first, on 4317).
const DefaultProtocol = ProtocolGRPC

// Config says where traces go. Empty fields take the standard OTEL_*
// variables, which the exporters read themselves (endpoint, headers,
// timeout, TLS certificates, compression).
type Config struct {
	// Protocol: grpc or http/protobuf; empty means
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, OTEL_EXPORTER_OTLP_PROTOCOL, else
	// DefaultProtocol.
	Protocol string
	// Endpoint: host:port or a URL (http:// is plaintext).
	Endpoint string
	// Insecure sends without TLS.
	Insecure bool
	// ServiceName names the service; empty means OTEL_SERVICE_NAME, else
	// DefaultService.
	ServiceName, DefaultService string
	// SampleRatio, when set, samples that share of new traces, following a
	// caller's decision (ParentBased); nil means OTEL_TRACES_SAMPLER.
	SampleRatio *float64
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
}

// ErrConfig is the kind of a configuration error of New.
var ErrConfig = errors.New("otlp: invalid configuration")

// Enabled reports whether traces are to be exported: exporter is "otlp",
// or empty and OTEL_TRACES_EXPORTER is "otlp"; never when OTEL_SDK_DISABLED
// is true.
func Enabled(exporter string, getenv func(string) string) bool {
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if exporter == "" {
		exporter = strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	}
	return exporter == "otlp"
}

// Protocol returns the protocol cfg resolves to.
func (cfg Config) protocol() string {
	getenv := cfg.getenv()
	for _, p := range []string{cfg.Protocol, getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"), getenv("OTEL_EXPORTER_OTLP_PROTOCOL")} {
		if p = strings.TrimSpace(p); p != "" {
			return p
		}
	}
	return DefaultProtocol
}

func (cfg Config) getenv() func(string) string {
	if cfg.Getenv != nil {
		return cfg.Getenv
	}
	return os.Getenv
}

// New returns a TracerProvider exporting over OTLP in batches. Shut it
// down when the process ends, to send what is still queued. Nothing is
// dialled until the first batch.
func New(ctx context.Context, cfg Config) (*sdktrace.TracerProvider, error) {
	exp, err := exporter(ctx, cfg)
	if err != nil {
		return nil, err
	}
	name := cfg.ServiceName
	if name == "" {
		name = cfg.getenv()("OTEL_SERVICE_NAME")
	}
	if name == "" {
		name = cfg.DefaultService
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName(name)))
	if err != nil {
		return nil, fmt.Errorf("otlp: resource: %w", err)
	}
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if r := cfg.SampleRatio; r != nil {
		opts = append(opts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*r))))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

func exporter(ctx context.Context, cfg Config) (*otlptrace.Exporter, error) {
	url := strings.Contains(cfg.Endpoint, "://")
	switch p := cfg.protocol(); p {
	case ProtocolGRPC:
		var opts []otlptracegrpc.Option
		switch {
		case url:
			opts = append(opts, otlptracegrpc.WithEndpointURL(cfg.Endpoint))
		case cfg.Endpoint != "":
			opts = append(opts, otlptracegrpc.WithEndpoint(cfg.Endpoint))
		}
		if cfg.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	case ProtocolHTTP, "http":
		var opts []otlptracehttp.Option
		switch {
		case url:
			opts = append(opts, otlptracehttp.WithEndpointURL(cfg.Endpoint))
		case cfg.Endpoint != "":
			opts = append(opts, otlptracehttp.WithEndpoint(cfg.Endpoint))
		}
		if cfg.Insecure {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		return otlptracehttp.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("%w: protocol %q (want %s or %s)", ErrConfig, p, ProtocolGRPC, ProtocolHTTP)
	}
}
