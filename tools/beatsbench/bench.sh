#!/usr/bin/env bash
# Runs beatsbench -baseline for two shapes (4 connections × 2048-event
# batches, 200 connections × 50-event batches), with logpond's
# journal on this machine's disk and its ledger on a second file system (a
# loop-mounted ext4 whose image lives on a tmpfs). Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d /tmp/beatsbench.XXXXXX)
img=/dev/shm/beatsbench-ledger.img
cleanup() { umount "$work/ledger-fs" 2>/dev/null || true; rm -f "$img"; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$work/journal-parent" "$work/ledger-fs"
truncate -s 4G "$img"
mkfs.ext4 -q -F "$img"
# discard: stores removed between rounds give their memory back to /dev/shm.
mount -o loop,discard "$img" "$work/ledger-fs"
cat > "$work/logpond.toml" <<TOML
[journal]
dir = "$work/journal-parent/journal"
[ledger]
dir = "$work/ledger-fs/ledger"
max_bytes = "3GiB"
[input.beats]
listen = "127.0.0.1:0"
[output.elasticsearch]
# The benchmark measures ingest; nothing drains the ledger.
enabled = false
[log]
level = "warn"
TOML
# The beats listening line is logged at info; keep info for it.
sed -i 's/level = "warn"/level = "info"/' "$work/logpond.toml"
DURATION=${DURATION:-10s}
ROUNDS=${ROUNDS:-3}
for shape in "4 2048" "200 50"; do
  set -- $shape
  rm -rf "$work/journal-parent/journal" "$work/ledger-fs/ledger"
  bin/beatsbench -baseline -connections "$1" -batch "$2" -event-size 1024 -duration "$DURATION" -rounds "$ROUNDS" \
    -logpond bin/logpond -logpond-config "$work/logpond.toml" -naive-dir "$work/journal-parent" \
    -logpond-wipe "$work/journal-parent/journal $work/ledger-fs/ledger"
done
