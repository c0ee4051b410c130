# logpond's container image. Build it with `make image` (CONTAINER_ENGINE=podman
# works too), never straight from the repository root: the build context is the
# staging directory `make image` prepares ($(BIN)/image), which holds only what
# the image gets — the static binaries built on the host, the host's CA bundle,
# passwd and group (deploy/container), the LICENSE and two empty directories.
# Paths, user and ports are the ones the Kubernetes manifests rely on
# (docs/kubernetes.md); deploy/container's test checks them.

# An empty base: nothing to pull, so the image builds offline, and nothing in it
# but logpond (no shell, no package manager to patch). Both binaries are built
# with CGO_ENABLED=0, so they need no libc or dynamic loader.
FROM scratch

# The build's identity, passed by `make image` (the same VERSION and REVISION
# that `logpond -version` prints) and shown as OCI labels by `inspect`.
ARG VERSION=dev
ARG REVISION=
ARG SOURCE=https://github.com/logpond/logpond
LABEL org.opencontainers.image.title="logpond" \
      org.opencontainers.image.description="Beats ingest server with a durable journal and ledger in front of Elasticsearch" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0"

# The user the server runs as must have a name: logpond and ledgerctl look the
# owner of the stores up by uid (os/user, which without cgo reads these files)
# to name it in their messages.
COPY passwd group /etc/

# TLS to Elasticsearch and to Lumberjack receivers verifies servers against
# this bundle: the path where Go's crypto/x509 looks first on Linux.
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt

# The server and its store tool, side by side so that
# `kubectl exec POD -- ledgerctl -config /etc/logpond/logpond.toml stat` works.
COPY logpond ledgerctl /usr/local/bin/

# Apache-2.0 asks that a redistributed copy carries the licence.
COPY LICENSE /usr/share/doc/logpond/LICENSE

# /var/lib/logpond belongs to root (an empty directory copied without
# --chown): a COPY --chown would also give the parents it creates to the user.
COPY empty/ /var/lib/logpond/
# The journal and ledger directories belong to the server's user (0750), so
# that a run without mounted volumes (`podman run`, whose anonymous volumes
# copy this ownership) can write them; Kubernetes volumes get theirs from the
# pod's fsGroup.
COPY --chown=65532:65532 state/ /var/lib/logpond/

# SSL_CERT_FILE names the bundle explicitly, for anything that does not probe
# the usual paths; PATH finds both binaries for `exec`.
ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    PATH=/usr/local/bin

# Never root: 65532 is "logpond" in the passwd above. Numeric, so that
# Kubernetes' runAsNonRoot can verify it without reading /etc/passwd.
USER 65532:65532

# The two stores, each meant for its own volume (in Kubernetes, its own
# PersistentVolumeClaim): the journal fsyncs every group of records and the
# ledger uses direct I/O, so neither belongs on the container's overlay layer.
VOLUME ["/var/lib/logpond/journal", "/var/lib/logpond/ledger"]

# 5044: the Beats (Lumberjack v2) input; 9600: the admin listener (health,
# metrics). The configuration must listen on 0.0.0.0 for them to be reached.
EXPOSE 5044 9600

# The configuration is mounted at /etc/logpond/logpond.toml (a ConfigMap in
# Kubernetes); arguments given to `run` replace CMD, e.g. `-check-config FILE`
# or `-version`.
ENTRYPOINT ["/usr/local/bin/logpond"]
CMD ["-config", "/etc/logpond/logpond.toml"]
