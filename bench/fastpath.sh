#!/usr/bin/env bash
# Issue 15's figures in one command, each against its baseline in the same
# run: cold `crucible exec -- /bin/true` vs bubblewrap (wall, CPU, page
# faults), `crucible run hello.ts` vs `deno run`, then the warm pools (ts
# and py) one at a time, back to back and 8 in flight, against bubblewrap's
# CPU per run, beside cold `crucible run --lang L`. As root, with
# bubblewrap installed (apt-get install -y bubblewrap) and `npm install`
# done (Deno). N and ROUNDS scale the runs.
set -euo pipefail
cd "$(dirname "$0")/.."
CGO_ENABLED=0 go build -o /tmp/crucible ./cmd/crucible
CGO_ENABLED=0 go build -o /tmp/bench-pool ./bench/pool
go run ./bench/startup -crucible /tmp/crucible -n "${N:-200}"
/tmp/bench-pool -rounds "${ROUNDS:-10}" -crucible /tmp/crucible
