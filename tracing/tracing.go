// Package tracing is Crucible's OpenTelemetry tracing: the tracer provider
// that crucible serve sets up from the standard environment
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_EXPORTER_OTLP_PROTOCOL, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES,
// OTEL_TRACES_SAMPLER) or serve.otel, exporting OTLP over HTTP; and the
// trace context in an MCP request's _meta (traceparent, tracestate:
// SEP-414), continued from a client and passed on to a downstream server.
// With nothing configured the provider is OpenTelemetry's no-op, and a span
// costs a few allocations.
//
// Nothing secret goes in a span: the callers give sizes, counts, hashes
// and names, never a secret, a placeholder, a program's source, or a tool's
// arguments or results.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Settings are serve.otel's: the environment's variables win over them.
type Settings struct {
	// Endpoint is the OTLP base URL (as OTEL_EXPORTER_OTLP_ENDPOINT:
	// /v1/traces is added); "" is off, unless the environment sets one.
	Endpoint string
	// ServiceName is the service.name; "" is "crucible".
	ServiceName string
}

// Tracer is Crucible's tracer, of whatever provider is set (Setup's, or
// the no-op).
func Tracer() trace.Tracer { return otel.Tracer("github.com/cruciblehq/crucible") }

// Setup sets the global tracer provider as s and the environment say, and
// returns the function that flushes and stops it; on says whether spans
// are exported at all. A protocol other than http/protobuf is refused.
func Setup(ctx context.Context, s Settings, version string) (shutdown func(context.Context) error, on bool, err error) {
	off := func(context.Context) error { return nil }
	endpoint := s.Endpoint
	if env := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); env != "" {
		endpoint = env
	}
	if endpoint == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return off, false, nil
	}
	// The traces' own protocol wins over the general one.
	which := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if os.Getenv(which) == "" {
		which = "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	if p := os.Getenv(which); p != "" && p != "http/protobuf" {
		return off, false, fmt.Errorf("%s=%s: Crucible exports OTLP over HTTP only (http/protobuf)", which, p)
	}
	var opts []otlptracehttp.Option
	if os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" {
		// serve.otel's: the exporter reads the environment's itself.
		u, err := url.Parse(endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return off, false, errors.New("serve.otel.endpoint: not an http or https URL")
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(endpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return off, false, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	name := s.ServiceName
	if name == "" {
		name = "crucible"
	}
	// The environment's service name and attributes win (WithFromEnv
	// comes after).
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(name), semconv.ServiceVersion(version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return off, false, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// The sampler is the SDK's default: OTEL_TRACES_SAMPLER if set, else
	// parent-based always-on.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	return tp.Shutdown, true, nil
}

// propagator reads and writes traceparent and tracestate.
var propagator = propagation.TraceContext{}

// FromMeta is ctx with the remote span context in an MCP request's _meta
// (traceparent, tracestate), if it has a valid one.
func FromMeta(ctx context.Context, meta map[string]any) context.Context {
	if len(meta) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, metaCarrier(meta))
}

// Meta is the _meta that carries ctx's span to a downstream server: nil
// when ctx has none (no tracing, or a span not sampled in).
func Meta(ctx context.Context) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	m := map[string]any{}
	propagator.Inject(ctx, metaCarrier(m))
	return m
}

// metaCarrier is an MCP _meta as a propagation carrier: its string values
// only.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	if len(s) > 512 {
		return "" // no header of the trace context is that long
	}
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// Name is a name for a span's attribute: printable ASCII, at most 128
// bytes; anything else is replaced by its length.
func Name(s string) string {
	if len(s) > 128 {
		return fmt.Sprintf("(%d bytes)", len(s))
	}
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return fmt.Sprintf("(%d bytes)", len(s))
		}
	}
	return s
}
