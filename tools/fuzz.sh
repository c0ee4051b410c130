#!/usr/bin/env bash
# fuzz.sh runs every Fuzz function of every package for FUZZTIME each
# (default 30s), found with go test -list, so that no target can be left
# out. It stops at the first target that fails.
#
# Go 1.26's fuzzing coordinator can fail a target with nothing but
# "context deadline exceeded" when -fuzztime runs out, having found
# nothing (go.dev/issue/75804, fixed in Go 1.27): such a run, which wrote
# no failing input under testdata/fuzz, is run once more before it
# counts as a failure.
#
# Minimizing new inputs is off (-fuzzminimizetime 0): within a FUZZTIME
# of seconds it would take most of the time.
set -euo pipefail
GO=${GO:-go}
FUZZTIME=${FUZZTIME:-30s}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

fuzz() { # pkg target
	"$GO" test -run '^$' -fuzz "^$2\$" -fuzzminimizetime 0 -fuzztime "$FUZZTIME" "$1" 2>&1 | tee "$log"
}

for pkg in $("$GO" list ./...); do
	for target in $("$GO" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "== $pkg $target"
		if fuzz "$pkg" "$target"; then
			continue
		fi
		if grep -q 'Failing input written to' "$log" || ! grep -qx '    context deadline exceeded' "$log"; then
			exit 1
		fi
		echo "== $pkg $target: the coordinator's deadline race (go.dev/issue/75804), once more"
		fuzz "$pkg" "$target"
	done
done
