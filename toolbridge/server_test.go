package toolbridge

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests' own MCP server, for what the real ones cannot do on demand:
// crash mid-call, hang, return 10 MB or an error, start slowly or not at
// all. The test binary is the server when testServerEnv is set in its
// (otherwise empty) environment.
const testServerEnv = "TOOLBRIDGE_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(testServerEnv) != "" {
		serveStdio()
		return
	}
	flag.Parse()
	os.Exit(m.Run())
}

func serveStdio() {
	if os.Getenv("DIE_AT_START") != "" {
		fmt.Fprintln(os.Stderr, "loading config")
		fmt.Fprintln(os.Stderr, "fatal: no token configured")
		os.Exit(1)
	}
	if d, err := time.ParseDuration(os.Getenv("SLOW_START")); err == nil {
		time.Sleep(d)
	}
	home := ""
	for i, a := range os.Args {
		if a == "-home" && i+1 < len(os.Args) {
			home = os.Args[i+1]
		}
	}
	if err := testServer(home, true).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

type textArgs struct {
	Text string `json:"text" jsonschema:"what to echo"`
}

type sizeArgs struct {
	N int `json:"n" jsonschema:"how many bytes"`
}

type answer struct {
	N    int    `json:"n"`
	Unit string `json:"unit"`
}

// testServer is the server's tools; home is the host's home directory, for
// an error message that names it. A server in the test's own process
// cannot crash.
func testServer(home string, canCrash bool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "testserver", Version: "1"}, nil)
	// Names with '/', as aggregating servers give them: path.Match's '*'
	// did not cross it.
	for _, name := range []string{"admin/delete_repo", "delete_/x"} {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Deletes."},
			func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return text("deleted by " + name), nil, nil
			})
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes the text back.\nSecond line."},
		func(_ context.Context, _ *mcp.CallToolRequest, a textArgs) (*mcp.CallToolResult, any, error) {
			return text(a.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "structured", Description: "Returns structured content."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, answer, error) {
			return nil, answer{N: 42, Unit: "things"}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "json_text", Description: "Returns JSON as text."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(` {"a": 1, "b": [2, 3]}`), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "image", Description: "Returns an image."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: []byte("\x89PNG")}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fails, naming host paths and its token."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			wd, _ := os.Getwd()
			exe, _ := os.Executable()
			msg := fmt.Sprintf("cannot open %s/data.db (server %s, config %s/.testrc, token %s)", wd, exe, home, os.Getenv("CANARY"))
			r := text(msg)
			r.IsError = true
			return r, nil, nil
		})
	// Its schema names the host's home and the token: both are redacted
	// from what the code is shown.
	leakSchema := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"path": {Type: "string", Description: "a file under " + home + "; the token is " + os.Getenv("CANARY")},
	}}
	mcp.AddTool(s, &mcp.Tool{Name: "leak", Description: "Returns its token.", InputSchema: leakSchema},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(`{"token": "token=` + os.Getenv("CANARY") + `", "n": 4242424}`), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "leak_encoded", Description: "Returns its token, encoded."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(strings.Join(encodings(os.Getenv("CANARY")), "\n")), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "environ", Description: "Lists its environment's names."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			var names []string
			for _, kv := range os.Environ() {
				k, _, _ := strings.Cut(kv, "=")
				names = append(names, k)
			}
			slices.Sort(names)
			b, _ := json.Marshal(names)
			return text(string(b)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "pid", Description: "Returns its process id."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return text(fmt.Sprint(os.Getpid())), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "big", Description: "Returns n bytes of text."},
		func(_ context.Context, _ *mcp.CallToolRequest, a sizeArgs) (*mcp.CallToolResult, any, error) {
			return text(strings.Repeat("x", a.N)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "hang", Description: "Never answers."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: "crash", Description: "Exits in the middle of the call."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			if canCrash {
				os.Exit(3)
			}
			return text("cannot crash in process"), nil, nil
		})
	// Decodes its arguments as a Go server does, into a struct: keys match
	// fields in any case, the last one wins, numbers are floats; and says
	// what it read.
	s.AddTool(&mcp.Tool{Name: "transfer", Description: "Says what it read.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct {
				Owner string  `json:"owner"`
				ID    float64 `json:"id"`
				Force any     `json:"force"`
			}
			if err := json.Unmarshal(r.Params.Arguments, &a); err != nil {
				return nil, err
			}
			return text(fmt.Sprintf("owner=%s id=%.0f force=%v raw=%s", a.Owner, a.ID, a.Force, r.Params.Arguments)), nil
		})
	s.AddResource(&mcp.Resource{URI: "test://hello", Name: "hello", MIMEType: "text/plain"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, MIMEType: "text/plain", Text: "hello"}}}, nil
		})
	return s
}

// encodings are v as a server may echo it: base64 (standard and URL-safe,
// at each alignment inside a longer text; wrapped at 60, 64 and 76 columns
// as GitHub's contents API, PEM and MIME wrap it, a break falling inside
// v's encoding), hex, percent-encoded, escaped in a JSON string.
func encodings(v string) []string {
	var out []string
	for _, pre := range []string{"", "x", "xy"} {
		out = append(out, base64.StdEncoding.EncodeToString([]byte(pre+v+"?>")), base64.RawURLEncoding.EncodeToString([]byte(pre+v+"?>")))
	}
	for _, w := range []struct {
		width int
		eol   string
	}{{60, "\n"}, {64, "\n"}, {76, "\r\n"}} {
		enc := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("p", w.width*3/4-6) + v + "?>"))
		var b strings.Builder
		for i := 0; i < len(enc); i += w.width {
			if i > 0 {
				b.WriteString(w.eol)
			}
			b.WriteString(enc[i:min(i+w.width, len(enc))])
		}
		out = append(out, b.String())
	}
	var pct, js strings.Builder
	for i := range len(v) {
		fmt.Fprintf(&pct, "%%%02X", v[i])
		fmt.Fprintf(&js, `\u%04x`, v[i])
	}
	return append(out, hex.EncodeToString([]byte(v)), strings.ToUpper(hex.EncodeToString([]byte(v))), pct.String(), `"`+js.String()+`"`)
}
