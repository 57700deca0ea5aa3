#!/bin/sh
# Rootless against root, in the same run: cold `crucible exec -- /bin/true`,
# warm `execute` through `crucible serve`, and the network's added latency
# per connection (issue 23). As root: it makes a user for the run the way the
# rootless tests do (in a mount namespace whose /etc names it, with a range
# of subordinate ids, a 0666 tun node and a delegated cgroup), and leaves
# nothing behind. Needs newuidmap (package uidmap), perf and farm-bench.
#
#   bench/rootless.sh            # N=100 runs of each cold command
#   COLD=only bench/rootless.sh  # the cold command alone
set -eu
cd "$(dirname "$0")/.."
N=${N:-100}
COLD=${COLD:-}
U=54399
work=$(mktemp -d /tmp/crucible-bench-rootless-XXXXXX)
chmod 0755 "$work"
cg=""
cleanup() {
	for d in $cg; do rmdir "$d" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
trap "exit 130" INT TERM

CGO_ENABLED=0 go build -o "$work/crucible" ./cmd/crucible
CGO_ENABLED=0 go build -o "$work/bench-serve" ./bench/serve
CGO_ENABLED=0 go build -o "$work/bench-egress" ./bench/egress

mkdir "$work/etc" "$work/ov"
cp /etc/passwd /etc/group "$work/etc/"
echo "crubench:x:$U:$U::/nonexistent:/bin/sh" >>"$work/etc/passwd"
echo "crubench:x:$U:" >>"$work/etc/group"
echo "crubench:3100000000:65536" >"$work/etc/subuid"
cp "$work/etc/subuid" "$work/etc/subgid"
mknod -m 0666 "$work/tun" c 10 200
# A cgroup delegated to the user, in each v1 hierarchy (or v2, where this
# shell's cgroup offers memory, pids and cpu); root's runs start in it too.
if v2=$(grep '^0::' /proc/self/cgroup | cut -d: -f3) && grep -qw memory "/sys/fs/cgroup$v2/cgroup.controllers" 2>/dev/null; then
	cg="/sys/fs/cgroup$v2/crucible-bench-$$"
else
	for c in memory pids cpu; do cg="$cg /sys/fs/cgroup/$c$(grep ":$c:" /proc/self/cgroup | cut -d: -f3)/crucible-bench-$$"; done
fi
for d in $cg; do mkdir "$d"; chown "$U" "$d" "$d"/*; done

# The same wrapper for both sides, so that setpriv's cost is on each.
for who in root user; do
	id=0; [ $who = user ] && id=$U
	printf '#!/bin/sh\nHOME=%s exec setpriv --reuid=%s --regid=%s --clear-groups -- %s "$@"\n' "$work" $id $id "$work/crucible" >"$work/as-$who"
	chmod 0755 "$work/as-$who"
done

unshare -m --propagation private sh -eu -c '
	work=$1 cg=$2 N=$3 COLD=$4
	mount -t tmpfs tmpfs "$work/ov"
	mkdir "$work/ov/upper" "$work/ov/work"
	cp -a "$work/etc/." "$work/ov/upper/"
	mount -t overlay overlay -o "lowerdir=/etc,upperdir=$work/ov/upper,workdir=$work/ov/work" /etc
	mount --bind "$work/tun" /dev/net/tun
	for d in $cg; do echo $$ >"$d/cgroup.procs"; done
	cd /
	for who in root user; do "$work/as-$who" exec -- /bin/true || { echo "crucible exec as $who failed" >&2; exit 1; }; done
	echo "== doctor, as the user"
	"$work/as-user" doctor | grep -E "^(privileges|cgroups|network)"
	echo "== cold crucible exec -- /bin/true: the user / root (wall)"
	farm-bench -n "$N" --timeout 600 --vs "$work/as-root exec -- /bin/true" -- "$work/as-user" exec -- /bin/true
	for who in root user; do
		echo "== perf stat, $who"
		perf stat -r "$N" -e page-faults,task-clock "$work/as-$who" exec -- /bin/true 2>&1 | grep -E "page-faults|task-clock|elapsed"
	done
	[ "$COLD" = only ] && exit 0
	for who in root user; do
		echo "== warm execute through serve, $who"
		"$work/bench-serve" -crucible "$work/as-$who" -n 20 -runs 3
		echo "== the network, $who"
		"$work/bench-egress" -crucible "$work/as-$who" -requests 200 -rounds 3 -bytes 20000000 -n 20
	done
' sh "$work" "$cg" "$N" "$COLD"
