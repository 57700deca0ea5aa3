package sandbox

import (
	"testing"

	"github.com/cruciblehq/crucible/config"
	"github.com/cruciblehq/crucible/violation"
)

// A forged report, then a UDP datagram to a host the policy refuses, just
// before the exit: the network's refusal is in the result. (The tun reader
// used to stop without reading what the device still held: the early end
// lost the datagram's refusal about half the time on a busy machine, the
// end on init's word now and then.)
func TestEarlyExitForgedUDP(t *testing.T) {
	cfg := config.Default()
	cfg.Network.Allow = []string{"example.com"}
	src := forge + `
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b"x", ("192.0.2.1", 9))
os._exit(0)
`
	for range 20 {
		both(t, cfg, src, func(how string, x *Result) {
			for _, v := range x.Violations {
				if v.Kind == violation.UDP {
					return
				}
			}
			t.Errorf("%s: violations %+v; want the UDP datagram's", how, x.Violations)
		})
	}
}
