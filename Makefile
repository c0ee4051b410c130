# logpond build. `make run` and `make test` are the two commands in the
# README's quick start; .ci/run calls `make test`.

GO      ?= go
# The build's identity, asked of git and stamped into logpond
# (internal/buildinfo): the Go toolchain's own VCS stamping finds no
# checkout in a linked git worktree, git does. Outside a checkout: "dev"
# and no revision.
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)
REVISION_TIME ?= $(shell TZ=UTC0 git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
MODIFIED ?= $(shell git rev-parse --verify -q HEAD >/dev/null 2>&1 && { git diff --quiet HEAD -- 2>/dev/null && echo false || echo true; })
BUILDINFO := github.com/logpond/logpond/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).Version=$(VERSION) -X $(BUILDINFO).Revision=$(REVISION) \
	-X $(BUILDINFO).RevisionTime=$(REVISION_TIME) -X $(BUILDINFO).Modified=$(MODIFIED)
# Where build puts the binaries, and run and install take them from
# (tools/*.sh, behind bench-beats and demo, expect the default).
BIN     ?= bin
CONFIG  ?= conf/logpond.example.toml
FUZZTIME ?= 30s
# A folder of real log lines (*.log, one program's log per file) for the
# benchmark report's compression part, which skips itself without one.
BENCH_LOGS ?= ../shared/testdata/logs
# The container image (make image): the engine that builds it (docker, or
# podman: any command line that takes `build -f FILE -t TAG DIR`, so
# `podman --root DIR` works too) and the tag it gets.
CONTAINER_ENGINE ?= docker
IMAGE ?= logpond:$(VERSION)
# The image also gets this tag, the one deploy/kubernetes/base names (its
# kustomization's newTag), so that the base runs what make image built on a
# cluster that uses local images; overlays name the pushed tag.
IMAGE_LOCAL ?= logpond:dev
# Where the image says its source is (org.opencontainers.image.source).
IMAGE_SOURCE ?= https://github.com/logpond/logpond
# The CA bundle the image verifies TLS servers with: the host's, which the
# Debian package ca-certificates provides (update-ca-certificates writes it).
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
# The image's build context: only what the image gets, staged by make image.
IMAGE_STAGE ?= $(BIN)/image

.PHONY: build logpond image test test-quick check-deps bench bench-beats bench-report run demo soak soak-power fuzz clean install filebeat

build: logpond
	$(GO) build -o $(BIN)/beatsbench ./tools/beatsbench
	$(GO) build -o $(BIN)/ledgerctl ./tools/ledgerctl
	$(GO) build -o $(BIN)/esserver ./tools/esserver
	$(GO) build -o $(BIN)/benchreport ./tools/benchreport

# The server alone, stamped with the build's identity (logpond -version).
logpond:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/logpond ./cmd/logpond

# The container image (Dockerfile), tagged $(IMAGE). Offline: the base is
# empty (FROM scratch) and everything in it is built or copied here. The
# binaries are static (CGO_ENABLED=0: scratch has no libc), -trimpath (no
# build paths in them) and stamped like `make logpond`, so `logpond -version`
# in the image names the build. The staging directory is emptied first, so
# nothing stale from an earlier build reaches the image.
image:
	@test -r $(CA_BUNDLE) || { echo "make image: no CA bundle at $(CA_BUNDLE): install the Debian package ca-certificates, or set CA_BUNDLE" >&2; exit 1; }
	rm -rf $(IMAGE_STAGE)
	mkdir -p $(IMAGE_STAGE)/empty $(IMAGE_STAGE)/state/journal $(IMAGE_STAGE)/state/ledger
	chmod 0750 $(IMAGE_STAGE)/state/journal $(IMAGE_STAGE)/state/ledger
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(IMAGE_STAGE)/logpond ./cmd/logpond
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(IMAGE_STAGE)/ledgerctl ./tools/ledgerctl
	cp $(CA_BUNDLE) $(IMAGE_STAGE)/ca-certificates.crt
	cp deploy/container/passwd deploy/container/group LICENSE $(IMAGE_STAGE)/
	chmod 0644 $(IMAGE_STAGE)/ca-certificates.crt $(IMAGE_STAGE)/passwd $(IMAGE_STAGE)/group $(IMAGE_STAGE)/LICENSE
	$(CONTAINER_ENGINE) build -f Dockerfile -t $(IMAGE) -t $(IMAGE_LOCAL) \
		--build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) --build-arg SOURCE=$(IMAGE_SOURCE) \
		$(IMAGE_STAGE)

# gofmt and vet first: they are fast and catch what review would.
test:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	@$(MAKE) --no-print-directory check-deps
	$(GO) test -race -count=1 -timeout 20m ./...
	cd deploy/kubernetes/check && $(GO) vet ./... && $(GO) test -race -count=1 ./...

# A first check, in a few minutes on a small or busy machine: gofmt, vet and
# the tests without -race, the long end-to-end runs (crashes, power cuts, a
# failing device, the demo) skipped (-short). make test is what CI runs.
test-quick:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -short -count=1 ./...

# The binaries users install (logpond, ledgerctl) must not link a test rig:
# internal/testkit holds stand-ins and harnesses that import product
# packages and would ship their code and flags in the product.
PRODUCT_BINARIES := ./cmd/logpond ./tools/ledgerctl
check-deps:
	@rigs=$$($(GO) list -deps $(PRODUCT_BINARIES) | grep -e '/internal/testkit/' -e 'franz-go/pkg/kfake' || true); \
	if [ -n "$$rigs" ]; then echo "product binaries link test rigs: $$rigs"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# End-to-end throughput against the no-durability and naive baselines:
# journal under ./data on this disk, ledger on a loop-mounted ext4 whose
# image lives in /dev/shm (a stand-in second device). Root.
bench-beats: build
	tools/beatsbench/bench.sh

# docs/benchmarks.md and docs/benchmarks-isolation.png from one run of
# tools/benchreport: ingest vs baselines for three event sizes and two zlib
# levels, the isolation run (three rounds), many small clients, the
# drain, fan-out, data streams and compression parts. Root; the isolation
# part alone takes about 10 minutes. strace is installed when missing (the fsync count needs it).
# flamegraph.pl (github.com/brendangregg/FlameGraph) draws the report's
# flame graphs of the ingest and drain paths: put it on PATH or set
# FLAMEGRAPH; without it the report has none.
FLAMEGRAPH ?= $(shell command -v flamegraph.pl)

bench-report: build
	@command -v strace >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq strace >/dev/null; } || true
	$(BIN)/benchreport -out docs/benchmarks.md -png docs/benchmarks-isolation.png -logs $(BENCH_LOGS) -compression-events 200000 -compression-duration 2s -compression-rounds 2 $(if $(FLAMEGRAPH),-flamegraph $(FLAMEGRAPH))

# The example configuration keeps its data under ./data.
run: build
	mkdir -p data
	$(BIN)/logpond -config $(CONFIG)

# The whole path for about 15 s in a temporary directory: beatsbench →
# logpond → the in-repo Elasticsearch test server (tools/esserver); prints
# throughput, ack latency, what reached the sink and `ledgerctl stat`.
# DEMO_SECONDS, DEMO_RATE and friends: see tools/demo.sh.
demo: build
	tools/demo.sh

# The end-to-end crash test (SIGKILL under load with Elasticsearch faults)
# with many more kills than CI's ten.
SOAK_KILLS ?= 200
soak:
	LOGPOND_SOAK_KILLS=$(SOAK_KILLS) $(GO) test -count=1 -timeout 2h -run '^TestCrashEndToEnd$$' -v ./cmd/logpond

# The power-cut soak at scale (root): the journal and the ledger on two
# loop-mounted ext4 file systems, four Beats connections sending 256-event
# windows of 512 B as fast as they are acknowledged for POWER_SECONDS
# (50: over 2 million acknowledged events on two cores),
# POWER_CUTS power cuts of both file systems at once (ext4 shutdown, then
# SIGKILL, remount, restart), then every acknowledged event must reach
# Elasticsearch. POWER_RUNS runs back to back, each reporting what was
# acknowledged and stored; a loss names the missing (connection, seq)
# ranges and the journal and ledger LSNs around them. POWER_STRESS=N runs
# stress-ng with N CPU workers beside it (installed when missing), to shift
# the timings. make test runs the same test briefly.
POWER_RUNS ?= 20
POWER_SECONDS ?= 50
POWER_CUTS ?= 4
POWER_STRESS ?= 0
# Each run acknowledges at least this many events before its last cut,
# however slow the machine (a cut waits for its share).
POWER_MIN_EVENTS ?= 2000000
soak-power:
	@if [ "$(POWER_STRESS)" != 0 ]; then \
		command -v stress-ng >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq stress-ng >/dev/null; \
	fi
	@set -e; stress=; \
	if [ "$(POWER_STRESS)" != 0 ]; then stress-ng --cpu $(POWER_STRESS) --quiet & stress=$$!; fi; \
	trap '[ -n "$$stress" ] && kill $$stress 2>/dev/null; true' EXIT; \
	LOGPOND_POWERSOAK_RUNS=$(POWER_RUNS) LOGPOND_POWERSOAK_SECONDS=$(POWER_SECONDS) LOGPOND_POWERSOAK_CUTS=$(POWER_CUTS) LOGPOND_POWERSOAK_MIN_EVENTS=$(POWER_MIN_EVENTS) \
		$(GO) test -count=1 -timeout 4h -run '^TestPowerCutSoak$$' -v ./cmd/logpond

# A real Filebeat 9 in $(BIN)/filebeat, for TestFilebeatDataStreams
# (cmd/logpond), which skips without one. Built from the beats module the Go
# module proxy serves: beats keeps the module path github.com/elastic/beats/v7
# for its 9.x releases, so a 9.x commit exists there only as a pseudo-version
# (FILEBEAT_VERSION; this one is 9.3.0-SNAPSHOT). The module's go.mod has
# replace directives, which `go install pkg@version` refuses, so it is built
# inside a writable copy of the module. Not part of test: it downloads several
# hundred modules and compiles for many minutes.
FILEBEAT_VERSION ?= v7.0.0-alpha2.0.20251031181001-be9871f5dab9
filebeat:
	@set -e; \
	work=$$(mktemp -d); trap 'rm -rf "$$work"' EXIT; \
	src=$$(cd "$$work" && $(GO) mod download -json github.com/elastic/beats/v7@$(FILEBEAT_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	if [ -z "$$src" ]; then echo "make filebeat: the module proxy did not serve github.com/elastic/beats/v7@$(FILEBEAT_VERSION)" >&2; exit 1; fi; \
	cp -R "$$src" "$$work/beats"; chmod -R u+w "$$work/beats"; \
	mkdir -p $(BIN); out=$$(cd $(BIN) && pwd)/filebeat; \
	echo "building $$out from github.com/elastic/beats/v7@$(FILEBEAT_VERSION)"; \
	cd "$$work/beats" && $(GO) build -o "$$out" ./filebeat && "$$out" version

# Fuzz every parser of untrusted bytes: every Fuzz function of every
# package (tools/fuzz.sh); seeds live in each package's testdata/.
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) tools/fuzz.sh

clean:
	rm -rf bin

# Install for a systemd host: logpond and ledgerctl to $(PREFIX)/bin, the
# user entry to /etc/sysusers.d, the example configuration to
# /etc/logpond/logpond.toml unless one is there (with journal.dir and
# ledger.dir set to /var/lib/logpond/...), the unit to /etc/systemd/system.
# The configuration holds password and api_key: it is installed 0640, group
# $(CONFIG_GROUP) (the service's, deploy/logpond.sysusers), so only root and
# the service read it; one line says what it was installed as.
#
# Installing into / creates the service's user and group when the group is
# missing: with $(SYSUSERS) and the sysusers.d entry, or, when that is not
# installed (or SYSUSERS is empty), with groupadd and useradd. It stops
# before writing the configuration when the file cannot be given the group.
#
# DESTDIR stages into a directory for a package: nothing on this machine
# changes, no user or group is created here. The staged file gets the group
# when this machine has it; otherwise it keeps the installing user's group,
# make says so, and the package must give it the group once its
# sysusers.d entry created it (e.g. chgrp in a post-install step).
#
# It never runs systemctl; the next steps are at the top of
# deploy/logpond.service.
PREFIX  ?= /usr/local
DESTDIR ?=
CONFIG_GROUP ?= logpond
SYSUSERS ?= systemd-sysusers
install: build
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)/etc/logpond $(DESTDIR)/etc/systemd/system $(DESTDIR)/etc/sysusers.d
	install -m 0755 $(BIN)/logpond $(BIN)/ledgerctl $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 deploy/logpond.sysusers $(DESTDIR)/etc/sysusers.d/logpond.conf
	@if [ -z "$(DESTDIR)" ] && ! getent group $(CONFIG_GROUP) >/dev/null 2>&1; then \
		if [ "$(CONFIG_GROUP)" != logpond ]; then \
			echo "make install: the group $(CONFIG_GROUP) does not exist: create it, or leave CONFIG_GROUP at logpond to have make install create the service's user and group" >&2; \
			exit 1; \
		elif [ -n "$(SYSUSERS)" ] && command -v $(SYSUSERS) >/dev/null; then \
			echo "$(SYSUSERS) /etc/sysusers.d/logpond.conf"; \
			$(SYSUSERS) /etc/sysusers.d/logpond.conf; \
		else \
			echo "groupadd --system logpond && useradd --system --gid logpond --home-dir /var/lib/logpond --no-create-home --shell /usr/sbin/nologin logpond"; \
			groupadd --system logpond && \
			{ getent passwd logpond >/dev/null || \
			  useradd --system --gid logpond --home-dir /var/lib/logpond --no-create-home --shell /usr/sbin/nologin --comment "logpond ingest server" logpond; }; \
		fi; \
	fi
	@conf=$(DESTDIR)/etc/logpond/logpond.toml; \
	if [ -e $$conf ]; then \
		echo "$$conf exists: left as it is ($$(stat -c '%04a %U:%G' $$conf))"; \
		if [ -n "$$(find $$conf -perm -0004)" ]; then \
			echo "WARNING: $$conf is readable by every user and may hold password or api_key: chmod 0640 $$conf && chgrp $(CONFIG_GROUP) $$conf"; \
		elif [ -z "$(DESTDIR)" ] && [ "$$(stat -c %G $$conf)" != $(CONFIG_GROUP) ]; then \
			echo "WARNING: $$conf is not in group $(CONFIG_GROUP): the service may not read it: chgrp $(CONFIG_GROUP) $$conf"; \
		fi; \
	else \
		sed -e 's|^dir = "data/journal"|dir = "/var/lib/logpond/journal"|' \
		    -e 's|^dir = "data/ledger"|dir = "/var/lib/logpond/ledger"|' \
		    conf/logpond.example.toml > $$conf.tmp && \
		grep -q '^dir = "/var/lib/logpond/journal"' $$conf.tmp && \
		grep -q '^dir = "/var/lib/logpond/ledger"' $$conf.tmp && \
		chmod 0640 $$conf.tmp || { rm -f $$conf.tmp; exit 1; }; \
		note=; \
		if ! why=$$(chgrp $(CONFIG_GROUP) $$conf.tmp 2>&1); then \
			if [ -z "$(DESTDIR)" ]; then \
				rm -f $$conf.tmp; \
				echo "make install: cannot give $$conf the group $(CONFIG_GROUP): $$why" >&2; \
				exit 1; \
			fi; \
			note="; the package must give it the group $(CONFIG_GROUP), which this machine cannot: $$why"; \
		fi; \
		mv $$conf.tmp $$conf && \
		echo "installed $$conf ($$(stat -c '%04a %U:%G' $$conf))$$note"; \
	fi
	sed -e 's|/usr/local/bin/|$(PREFIX)/bin/|g' deploy/logpond.service > $(DESTDIR)/etc/systemd/system/logpond.service
	chmod 0644 $(DESTDIR)/etc/systemd/system/logpond.service
