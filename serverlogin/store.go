package serverlogin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"golang.org/x/oauth2"
)

// Store keeps the tokens of logins on disk, one file per server and
// account, each readable by its owner alone: Dir/NAME/operator.json for
// the operator's own login (crucible login NAME), Dir/NAME/clients/KEY.json
// for a client's of crucible serve.
type Store struct {
	Dir string
}

// Operator is the account of the operator's own login.
const Operator = ""

// DefaultDir is where the user's logins are kept: $CRUCIBLE_STATE_DIR if
// set, else $XDG_STATE_HOME/crucible, else ~/.local/state/crucible; root's
// in /var/lib/crucible.
func DefaultDir() (string, error) {
	if d := os.Getenv("CRUCIBLE_STATE_DIR"); d != "" {
		if !filepath.IsAbs(d) {
			return "", errors.New("$CRUCIBLE_STATE_DIR is not an absolute path")
		}
		return d, nil
	}
	if os.Geteuid() == 0 {
		return "/var/lib/crucible", nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "crucible"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || !filepath.IsAbs(home) {
		return "", errors.New("there is no state directory for the logins: neither $XDG_STATE_HOME nor $HOME is set")
	}
	return filepath.Join(home, ".local", "state", "crucible"), nil
}

// Record is one login: the tokens, and what refreshing them takes.
type Record struct {
	// URL is the server's endpoint the tokens were issued for (their
	// resource); a server whose URL changes needs a new login.
	URL string `json:"url"`
	// The client that logged in: a dynamically registered one's secret is
	// kept here, a pre-registered one's is read from the config.
	ClientID     string           `json:"client_id"`
	ClientSecret string           `json:"client_secret,omitempty"`
	TokenURL     string           `json:"token_url"`
	AuthStyle    oauth2.AuthStyle `json:"auth_style,omitempty"`
	Scopes       []string         `json:"scopes,omitempty"`
	// StepUp are scopes the server asked for since (403
	// insufficient_scope), which the next login asks for too.
	StepUp []string `json:"step_up,omitempty"`

	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

func (r *Record) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: r.AccessToken, TokenType: r.TokenType, RefreshToken: r.RefreshToken, Expiry: r.Expiry}
}

func (r *Record) setToken(t *oauth2.Token) {
	r.AccessToken, r.TokenType, r.Expiry = t.AccessToken, t.TokenType, t.Expiry
	if t.RefreshToken != "" { // a server that does not rotate keeps the old one
		r.RefreshToken = t.RefreshToken
	}
}

// accountName is what an account may be: a client's key (see
// toolbridge.ClientKey), or Operator.
var accountName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

func (st *Store) path(server, account string) (string, error) {
	if account == Operator {
		return filepath.Join(st.Dir, server, "operator.json"), nil
	}
	if !accountName.MatchString(account) {
		return "", fmt.Errorf("%q is not an account name", account)
	}
	return filepath.Join(st.Dir, server, "clients", account+".json"), nil
}

// Load reads a login; nil and no error when there is none.
func (st *Store) Load(server, account string) (*Record, error) {
	p, err := st.path(server, account)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the login to server %s: %w", server, noPath(err))
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil || r.AccessToken == "" {
		return nil, fmt.Errorf("the login to server %s is damaged (run crucible login %s)", server, server)
	}
	return &r, nil
}

// Save writes a login at once and whole: a new file renamed over the old,
// mode 0600 in directories of mode 0700.
func (st *Store) Save(server, account string, r *Record) error {
	p, err := st.path(server, account)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("saving the login to server %s: %w", server, noPath(err))
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".login-*")
	if err != nil {
		return fmt.Errorf("saving the login to server %s: %w", server, noPath(err))
	}
	defer func() { _ = os.Remove(f.Name()) }() // once renamed, there is nothing to remove
	_, werr := f.Write(append(b, '\n'))
	serr := f.Sync()
	if cerr := f.Close(); werr == nil {
		werr = cmpErr(serr, cerr)
	}
	if werr == nil {
		werr = os.Rename(f.Name(), p)
	}
	if werr != nil {
		return fmt.Errorf("saving the login to server %s: %w", server, noPath(werr))
	}
	return nil
}

func cmpErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Remove forgets a login, and says whether there was one.
func (st *Store) Remove(server, account string) (bool, error) {
	p, err := st.path(server, account)
	if err != nil {
		return false, err
	}
	err = os.Remove(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("forgetting the login to server %s: %w", server, noPath(err))
	}
	return true, nil
}

// lock holds an exclusive lock on a login's lock file until unlock, so
// that two processes refreshing one login do not spend its refresh token
// twice (a server that rotates them refuses the second).
func (st *Store) lock(server, account string) (unlock func(), err error) {
	p, err := st.path(server, account)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return nil, fmt.Errorf("locking the login to server %s: %w", server, noPath(err))
	}
	f, err := os.OpenFile(p+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking the login to server %s: %w", server, noPath(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking the login to server %s: %w", server, err)
	}
	return func() { _ = f.Close() }, nil
}

// noPath is err without the path it names: a login's path is the host's,
// and an error may reach the code.
func noPath(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}
