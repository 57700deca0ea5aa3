// Package systemdscope asks a user's systemd for a cgroup of crucible's
// own: a transient scope with Delegate=yes holding this process, as
// rootless container runtimes do. On cgroup v2 that is how a user who is
// not root gets memory, pids and cpu to bound jails with; package
// owncgroup, above, decides when to ask (WantScope), and package jail makes
// the jails' cgroups in the scope.
//
// It talks to the user manager over its private socket
// ($XDG_RUNTIME_DIR/systemd/private, as systemctl --user does), with
// go-systemd's D-Bus client on godbus: no session bus is needed. Only the
// command line imports this package; package jail, which every jail's
// process links, imports only owncgroup and stays free of D-Bus.
package systemdscope

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	sd "github.com/coreos/go-systemd/v22/dbus"
	"github.com/cruciblehq/crucible/owncgroup"
	"github.com/cruciblehq/crucible/userns"
	"github.com/godbus/dbus/v5"
)

// Timeout bounds the whole exchange with the user manager.
const Timeout = 10 * time.Second

// Join asks the user's systemd for a delegated scope and moves this process
// into the scope's leaf (owncgroup.Leaf), when owncgroup.WantScope
// says to; it returns the scope's name, or "" when it did not ask. Call it
// before this process starts any other, which are then born in the leaf:
// in crucible started by a user, from the user namespace's copy (see
// userns.Enter) once it has settled. When it fails, it records why
// (owncgroup.ScopeFailed), and the jails' cgroup layer says so.
func Join(ctx context.Context) (string, error) {
	manager, v2 := owncgroup.WantScope()
	if manager == "" {
		return "", nil
	}
	name, err := join(ctx, manager, v2)
	if err != nil {
		owncgroup.ScopeFailed(err)
	}
	return name, err
}

// join makes the scope through the manager at the socket manager, and
// moves this process into its leaf on the cgroup v2 mount v2. Its errors
// name no path.
func join(ctx context.Context, manager, v2 string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	conn, err := connect(ctx, manager)
	if err != nil {
		return "", err
	}
	defer conn.Close()

	pid := os.Getpid()
	name := fmt.Sprintf("crucible-%d.scope", pid)
	props := []sd.Property{
		sd.PropDescription(fmt.Sprintf("crucible, pid %d", pid)),
		sd.PropPids(uint32(pid)),
		{Name: "Delegate", Value: dbus.MakeVariant(true)},
		// A scope that failed is gone too, not kept for inspection.
		{Name: "CollectMode", Value: dbus.MakeVariant("inactive-or-failed")},
	}
	done := make(chan string, 1)
	if _, err := conn.StartTransientUnitContext(ctx, name, "fail", props, done); err != nil {
		return "", fmt.Errorf("the user manager refused the scope: %w", err)
	}
	select {
	case r := <-done:
		if r != "done" {
			return "", fmt.Errorf("the scope's start job ended %q", r)
		}
	case <-ctx.Done():
		return "", errors.New("the user manager did not start the scope in time")
	}

	own := owncgroup.V2()
	if filepath.Base(own) != name {
		return "", errors.New("the scope started, but this process is not in it")
	}
	leaf := filepath.Join(v2, own, owncgroup.Leaf)
	if err := os.Mkdir(leaf, 0o755); err != nil {
		return "", errors.New("cannot create the scope's leaf cgroup: " + unwrapPath(err))
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte("0"), 0); err != nil {
		return "", errors.New("cannot move into the scope's leaf cgroup: " + unwrapPath(err))
	}
	return name, nil
}

// connect opens a connection to the user manager at its private socket:
// straight to systemd, with no bus between, so with no Hello.
func connect(ctx context.Context, manager string) (*sd.Conn, error) {
	return sd.NewConnection(func() (*dbus.Conn, error) {
		c, err := dbus.Dial("unix:path="+manager, dbus.WithContext(ctx))
		if err != nil {
			return nil, errors.New("cannot reach the user manager")
		}
		// As the manager sees us: the user, also from the user
		// namespace's copy of crucible, which is root only in there.
		if err := c.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(userns.HostUID()))}); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("the user manager refused us: %w", err)
		}
		return c, nil
	})
}

// unwrapPath is err's cause without the path that a *fs.PathError names.
func unwrapPath(err error) string {
	if u := errors.Unwrap(err); u != nil {
		return u.Error()
	}
	return err.Error()
}
