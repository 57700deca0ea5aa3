# The image of crucible serve: the static binary, and what its jails bind
# read-only (/usr with python3 and a shell, the CA certificates), nothing
# else. It runs as a user that is not root; the settings a container needs
# for the jail (and the Kubernetes pod profiles) are in deploy/README.md.
#
#   docker build -t crucible .
#   docker run --rm --user 65532:65532 --cap-drop ALL \
#     --security-opt seccomp=deploy/seccomp/crucible.json \
#     --security-opt systempaths=unconfined --security-opt apparmor=unconfined \
#     --device /dev/net/tun -e CRUCIBLE_TOKEN -p 8080:8080 crucible
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /crucible ./cmd/crucible

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3-minimal ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /crucible /usr/bin/crucible
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/bin/crucible"]
CMD ["serve", "--http", "0.0.0.0:8080"]
