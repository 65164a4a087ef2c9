package otlp_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/capgraph/capgraph/graph/checkpoint/memory"
	"github.com/capgraph/capgraph/telemetry/internal/teletest"
	"github.com/capgraph/capgraph/telemetry/otlp"
	"github.com/capgraph/capgraph/telemetry/tracing"
)

// received collects what a collector was sent.
type received struct {
	mu       sync.Mutex
	spans    []string
	services []string
}

func (r *received) add(req *coltrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				r.services = append(r.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				r.spans = append(r.spans, s.Name)
			}
		}
	}
}

type grpcCollector struct {
	coltrace.UnimplementedTraceServiceServer
	r *received
}

func (c grpcCollector) Export(_ context.Context, req *coltrace.ExportTraceServiceRequest) (*coltrace.ExportTraceServiceResponse, error) {
	c.r.add(req)
	return &coltrace.ExportTraceServiceResponse{}, nil
}

// A turn traced with the OTLP exporter reaches a collector listening with
// the OTLP protocol (the collector's own protobuf types), over gRPC and over
// HTTP, with the service name of the configuration.
func TestTracesReachACollector(t *testing.T) {
	for _, protocol := range []string{otlp.ProtocolGRPC, otlp.ProtocolHTTP} {
		t.Run(protocol, func(t *testing.T) {
			r := &received{}
			var endpoint string
			if protocol == otlp.ProtocolGRPC {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				srv := grpc.NewServer()
				coltrace.RegisterTraceServiceServer(srv, grpcCollector{r: r})
				go srv.Serve(ln) //nolint:errcheck // stopped below
				defer srv.Stop()
				endpoint = ln.Addr().String()
			} else {
				ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					b, _ := io.ReadAll(req.Body)
					var m coltrace.ExportTraceServiceRequest
					if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(b, &m) != nil {
						http.Error(w, "not OTLP", http.StatusBadRequest)
						return
					}
					r.add(&m)
					w.Header().Set("Content-Type", "application/x-protobuf")
					out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
					w.Write(out) //nolint:errcheck
				}))
				defer ts.Close()
				endpoint = ts.URL
			}
			tp, err := otlp.New(context.Background(), otlp.Config{Protocol: protocol, Endpoint: endpoint, Insecure: true,
				DefaultService: "controlroom", Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := teletest.Agent(t, memory.New(), tracing.New(tp), false)
			teletest.Turn(t, a, "op-1", teletest.Answered)
			if err := tp.Shutdown(context.Background()); err != nil {
				t.Fatalf("shutdown (flushes the batch): %v", err)
			}
			r.mu.Lock()
			defer r.mu.Unlock()
			if !slices.Contains(r.spans, "capgraph.run") || !slices.Contains(r.spans, "llm response") || len(r.spans) < 10 {
				t.Errorf("collector received %v", r.spans)
			}
			if len(r.services) == 0 || r.services[0] != "controlroom" {
				t.Errorf("service names %v, want controlroom", r.services)
			}
		})
	}
}

func TestEnabled(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, c := range []struct {
		exporter string
		env      func(string) string
		want     bool
	}{
		{"", env(), false},
		{"otlp", env(), true},
		{"none", env("OTEL_TRACES_EXPORTER", "otlp"), false},
		{"", env("OTEL_TRACES_EXPORTER", "otlp"), true},
		{"", env("OTEL_TRACES_EXPORTER", "console"), false},
		{"otlp", env("OTEL_SDK_DISABLED", "TRUE"), false},
	} {
		if got := otlp.Enabled(c.exporter, c.env); got != c.want {
			t.Errorf("Enabled(%q, env) = %v, want %v", c.exporter, got, c.want)
		}
	}
}
