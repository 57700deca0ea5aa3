package tracing

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

// The trace context of a client's _meta is continued, and passed on in a
// downstream call's; what is not a valid traceparent (or is absurdly long)
// is no parent.
func TestMeta(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := FromMeta(context.Background(), map[string]any{"traceparent": tp, "tracestate": "a=b"})
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() || sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || !sc.IsRemote() {
		t.Fatalf("the span context from _meta: %+v", sc)
	}
	if m := Meta(ctx); m["traceparent"] != tp || m["tracestate"] != "a=b" {
		t.Errorf("Meta = %v", m)
	}
	for _, bad := range []any{"00-zz-yy-01", 42, tp + strings.Repeat(" ", 600)} {
		if sc := trace.SpanContextFromContext(FromMeta(context.Background(), map[string]any{"traceparent": bad})); sc.IsValid() {
			t.Errorf("%v gave a parent", bad)
		}
	}
	if Meta(context.Background()) != nil {
		t.Error("a context without a span gave a _meta")
	}
}

// Nothing configured: off, at no cost; a protocol other than
// http/protobuf, or an endpoint that is no URL, is refused.
func TestSetup(t *testing.T) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(v, "")
	}
	if _, on, err := Setup(context.Background(), Settings{}, "test"); on || err != nil {
		t.Fatalf("nothing configured: on %v, %v", on, err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	if _, _, err := Setup(context.Background(), Settings{Endpoint: "http://127.0.0.1:1"}, "test"); err == nil || !strings.Contains(err.Error(), "OTLP over HTTP only") {
		t.Errorf("grpc: %v", err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
	if _, _, err := Setup(context.Background(), Settings{Endpoint: "collector:4318"}, "test"); err == nil {
		t.Error("an endpoint that is no URL was taken")
	}
	if Name("echo") != "echo" || Name("a\x00b") != "(3 bytes)" || Name(strings.Repeat("x", 200)) != "(200 bytes)" {
		t.Error("Name")
	}
}
