// Package otlptest is an OTLP/HTTP trace receiver for tests: it decodes
// what an exporter sends to /v1/traces (protobuf, or gzip'd protobuf) and
// keeps the spans.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one span received, its ids in hex.
type Span struct {
	Service                 string
	Name                    string
	TraceID, SpanID, Parent string
	Attributes              map[string]string
	Status                  string // "" (unset), "ok", "error: message"
}

// Receiver is a running receiver.
type Receiver struct {
	URL string // the base URL, as OTEL_EXPORTER_OTLP_ENDPOINT takes it

	mu    sync.Mutex
	spans []Span
}

// New starts a receiver on loopback; t's cleanup stops it.
func New(t testing.TB) *Receiver {
	r := &Receiver{}
	hs := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(hs.Close)
	r.URL = hs.URL
	return r
}

// Spans are the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" || req.Method != http.MethodPost {
		http.NotFound(w, req)
		return
	}
	body := io.LimitReader(req.Body, 64<<20)
	if req.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	b, err := io.ReadAll(body)
	var msg coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.ResourceSpans {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				sp := Span{Service: service, Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					Parent: hex.EncodeToString(s.ParentSpanId), Attributes: attrs(s.Attributes)}
				switch st := s.GetStatus(); st.GetCode() {
				case 1:
					sp.Status = "ok"
				case 2:
					sp.Status = "error: " + st.GetMessage()
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

// attrs are kvs as strings.
func attrs(kvs []*common.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch x := v.GetValue().(type) {
		case *common.AnyValue_StringValue:
			m[kv.Key] = x.StringValue
		case *common.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(x.IntValue)
		case *common.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(x.BoolValue)
		default:
			m[kv.Key] = fmt.Sprint(v)
		}
	}
	return m
}
