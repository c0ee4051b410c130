// Package container is what logpond's container image is built from, beside
// the Dockerfile at the repository root: the image's /etc/passwd and
// /etc/group, which name uid and gid 65532 "logpond". `make image` stages
// them with the static binaries and the host's CA bundle.
//
// Its test builds the image with podman, in a storage of its own that it
// removes, and checks what the Kubernetes manifests rely on: the user, the
// ports, the volumes and their owner, the entrypoint, the environment, static
// binaries that run and a CA bundle that parses. The package has no Go API.
package container
