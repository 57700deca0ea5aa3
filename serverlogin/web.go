package serverlogin

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Web is the logins that crucible serve's clients make in a browser, each
// to an account of its own: a tool call that needs one gets a start URL
// (Ask), shown to that client's MCP client alone; /oauth/start sends the
// browser on to the authorization server, whose redirect comes back to
// /oauth/callback, and the tokens are saved for the account that was
// asked, and no other. A start URL works once, for webLoginTime.
type Web struct {
	settings func(server string) (*Settings, error)

	mu     sync.Mutex
	asked  map[string]*flow // by the start URL's id, until started
	states map[string]*flow // by the authorization's state, until called back
}

const (
	// webLoginTime bounds a web login, from Ask to its callback.
	webLoginTime = 10 * time.Minute
	// maxWebLogins bounds the logins waiting to be started.
	maxWebLogins = 256
)

type flow struct {
	server, account, base string
	expires               time.Time
	got                   chan callback // the redirect back
	authURL               chan string   // where the browser goes
	done                  chan error    // the login's end
	id                    string
	ended                 func(id string, err error) // told of the login's end; nil: nobody
}

// NewWeb makes the web logins of the servers that settings knows.
func NewWeb(settings func(server string) (*Settings, error)) *Web {
	return &Web{settings: settings, asked: map[string]*flow{}, states: map[string]*flow{}}
}

// Ask makes a login of account to server, whose browser part starts at
// the URL it returns, on base (serve's own origin, as its client reaches
// it): base/oauth/start?login=ID. ended, if not nil, is told when the
// login (its id, the URL's) has ended, and how.
func (w *Web) Ask(server, account, base string, ended func(id string, err error)) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for id, f := range w.asked {
		// Expired, or the same login asked anew: one link per account and
		// server works, the latest, so no client fills the table.
		if now.After(f.expires) || f.server == server && f.account == account {
			delete(w.asked, id)
		}
	}
	if len(w.asked) >= maxWebLogins {
		return "", errors.New("too many logins are waiting to be started; try again later")
	}
	id := rand.Text()
	w.asked[id] = &flow{server: server, account: account, base: base, expires: now.Add(webLoginTime),
		got: make(chan callback, 1), authURL: make(chan string, 1), done: make(chan error, 1), id: id, ended: ended}
	return base + "/oauth/start?login=" + id, nil
}

// Start is GET /oauth/start: it begins the login its URL names, and sends
// the browser to the authorization server.
func (w *Web) Start(rw http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("login")
	w.mu.Lock()
	f := w.asked[id]
	delete(w.asked, id)
	w.mu.Unlock()
	if f == nil || time.Now().After(f.expires) {
		page(rw, http.StatusGone, "This login link is unknown, used or expired: call the tool again for a new one.")
		return
	}
	s, err := w.settings(f.server)
	if err != nil {
		page(rw, http.StatusInternalServerError, "Server %s cannot be logged in to: %v", f.server, err)
		return
	}
	go func() {
		ctx, cancel := context.WithDeadline(context.Background(), f.expires)
		defer cancel()
		_, err := authorize(ctx, s, f.account, f.base+"/oauth/callback", func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			u, err := url.Parse(a.URL)
			if err != nil {
				return nil, err
			}
			// Known by its state before the browser is sent on: the
			// callback may come back at once.
			state := u.Query().Get("state")
			w.mu.Lock()
			w.states[state] = f
			w.mu.Unlock()
			defer func() {
				w.mu.Lock()
				delete(w.states, state)
				w.mu.Unlock()
			}()
			select {
			case f.authURL <- a.URL:
			default:
				// A second authorization (more scope) has no browser to
				// go to: the next call asks again.
				return nil, errors.New("the server asks for more scope than this login got: call the tool again for a new login")
			}
			return awaitCallback(ctx, f.got)
		})
		f.done <- err
		if f.ended != nil {
			f.ended(f.id, err)
		}
	}()
	select {
	case u := <-f.authURL:
		http.Redirect(rw, r, u, http.StatusFound)
	case err := <-f.done:
		if err == nil {
			page(rw, http.StatusOK, "Logged in to server %s.", f.server)
			return
		}
		page(rw, http.StatusBadGateway, "The login to server %s failed: %v", f.server, err)
	case <-r.Context().Done():
	}
}

// Callback is GET /oauth/callback: the authorization server's redirect,
// which ends the login whose state it carries (the SDK checks the state
// and the issuer once more).
func (w *Web) Callback(rw http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	w.mu.Lock()
	f := w.states[q.Get("state")]
	delete(w.states, q.Get("state"))
	w.mu.Unlock()
	if f == nil {
		page(rw, http.StatusBadRequest, "This login is unknown or already answered.")
		return
	}
	f.got <- callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss"), err: q.Get("error"), desc: q.Get("error_description")}
	select {
	case err := <-f.done:
		if err != nil {
			page(rw, http.StatusBadGateway, "The login to server %s failed: %v", f.server, err)
			return
		}
		page(rw, http.StatusOK, "Logged in to server %s. You can close this tab, and call the tool again.", f.server)
	case <-r.Context().Done():
	}
}

// page answers a browser with a line of plain text.
func page(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintf(w, format+"\n", args...)
}
