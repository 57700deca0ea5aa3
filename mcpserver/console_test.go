package mcpserver

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/internal/testenv"
)

// The console in a real browser (headless Chromium): without the token the
// page is a form and the event stream is refused; with it typed in, the
// page goes live, and an execution made after appears in it without a
// reload, with its client and outcome; the client filter (?client=) hides
// another client's.
func TestConsole(t *testing.T) {
	testenv.NeedRoot(t, "builds real jails")
	chromium := testenv.NeedTool(t, "chromium")
	s := newServer(t, func(c *config.Config) {
		c.Servers = map[string]config.Server{"gone": {URL: "http://127.0.0.1:1/mcp"}}
	})
	url := serveHTTP(t, s)
	for _, path := range []string{"/console", "/console/events"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a token: %s; want 401", path, resp.Status)
		}
	}

	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for token, want := range map[string]int{"wrong-token-0123456789": http.StatusUnauthorized, tokenA: http.StatusSeeOther} {
		resp, err := noRedirect.PostForm(url+"/console", map[string][]string{"token": {token}})
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		c := resp.Header.Get("Set-Cookie")
		if resp.StatusCode != want || (want == http.StatusSeeOther && (!strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Strict") ||
			!strings.Contains(c, "Path=/console") || strings.Contains(c, tokenA))) {
			t.Errorf("a login with %.6s: %s, cookie %q", token, resp.Status, c)
		}
	}

	// Its profile and its temporary files (its singleton socket) in the
	// test's directories: nothing of it stays.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("TMPDIR="+t.TempDir()), chromedp.NoSandbox, chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTime()
	if err := chromedp.Do(ctx,
		chromedp.Navigate(url+"/console"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), tokenA),
		chromedp.Click(chromedp.ID("go")),
		chromedp.WaitVisible(chromedp.ID("rows")),
		live,
	); err != nil {
		t.Fatalf("the console after the login: %v", err)
	}

	code := `try { await tools.gone.anything({}); } catch (e) {} return 1;`
	waitReady(t, s, "ts") // so the row says warm
	if _, out := execute(t, connectHTTP(t, url, tokenA, ""), map[string]any{"code": code}); out == nil || out.ExitCode != 0 {
		t.Fatalf("execute: %+v", out)
	}
	// The server that would not start, with its error, within a status
	// event or two.
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.getElementById("servers").textContent.includes("connection refused")`)); err != nil {
		t.Errorf("the servers' table: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](`document.getElementById("server").textContent.includes("configuration 1 (reloads: 0 taken, 0 refused)")`)); err != nil {
		t.Errorf("the server's line: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#rows tr.ok"))); err != nil {
		t.Fatalf("the execution's row: %v", err)
	}
	row, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#rows tr.ok")))
	if err != nil || !strings.Contains(row, "token:") || !strings.Contains(row, "ts") || !strings.Contains(row, "warm") || !strings.Contains(row, "ok") {
		t.Errorf("the row reads %q (%v)", row, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"/console?client=nobody"), live,
		chromedp.Sleep(time.Second)); err != nil { // the stream's rows have come by now, and are filtered out
		t.Fatal(err)
	}
	if shown, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#rows tr").length`)); err != nil || shown != 0 {
		t.Errorf("?client=nobody shows %d rows (%v)", shown, err)
	}
}

// live waits for the console's stream to be open.
var live = chromedp.Poll[chromedp.Void](`document.getElementById("state").textContent === "live"`)
