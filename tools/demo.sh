#!/usr/bin/env bash
# The whole path in one run (`make demo`): bin/beatsbench sends Lumberjack v2
# batches to bin/logpond, which acknowledges them once its journal fsynced
# them, moves them to its ledger and drains the ledger into bin/esserver (the
# in-repo Elasticsearch test server, rejecting a few bulk items with 429 so
# the output's retries show). Then it prints throughput, ack latency, what
# reached the sink, `ledgerctl stat` when bin/ledgerctl is built, and stops
# everything. Exits non-zero when the sink does not hold exactly the
# acknowledged events, or when anything fails.
#
# Everything lives in a temporary directory that is removed at exit
# (DEMO_KEEP=1 keeps it). Every server binds to 127.0.0.1; by default on
# ports the kernel picks, so nothing else on the machine is in the way.
#
# Environment (defaults in brackets):
#   DEMO_SECONDS [15]        how long beatsbench sends
#   DEMO_RATE [20000]        events/s over all connections (0: as fast as
#                            acknowledged; esserver keeps every document in
#                            memory, so mind the RAM)
#   DEMO_CONNECTIONS [4]  DEMO_BATCH [512]  DEMO_EVENT_SIZE [512]
#   DEMO_REJECT429 [0.02]    share of bulk items esserver rejects with 429
#   DEMO_BEATS_ADDR [127.0.0.1:0]  logpond's beats input
#   DEMO_ES_ADDR [127.0.0.1:0]     esserver
#   DEMO_DRAIN_TIMEOUT [60]  seconds to wait for the sink to catch up
#   DEMO_KEEP [0]            1 keeps the work directory (configuration, logs, stores)
#   LOGPOND_BIN, ESSERVER_BIN, BEATSBENCH_BIN, LEDGERCTL_BIN
#                            the binaries [bin/logpond, bin/esserver,
#                            bin/beatsbench, bin/ledgerctl]
set -euo pipefail

# Binaries given relative to the caller's directory stay valid after the cd.
abs() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
root=$(cd "$(dirname "$0")/.." && pwd)
logpond_bin=$(abs "${LOGPOND_BIN:-$root/bin/logpond}")
esserver_bin=$(abs "${ESSERVER_BIN:-$root/bin/esserver}")
beatsbench_bin=$(abs "${BEATSBENCH_BIN:-$root/bin/beatsbench}")
ledgerctl_bin=$(abs "${LEDGERCTL_BIN:-$root/bin/ledgerctl}")
seconds=${DEMO_SECONDS:-15}
rate=${DEMO_RATE:-20000}
connections=${DEMO_CONNECTIONS:-4}
batch=${DEMO_BATCH:-512}
event_size=${DEMO_EVENT_SIZE:-512}
reject429=${DEMO_REJECT429:-0.02}
beats_addr=${DEMO_BEATS_ADDR:-127.0.0.1:0}
es_addr=${DEMO_ES_ADDR:-127.0.0.1:0}
drain_timeout=${DEMO_DRAIN_TIMEOUT:-60}

die() { echo "demo: $*" >&2; exit 1; }

for b in "$logpond_bin" "$esserver_bin" "$beatsbench_bin"; do
  [[ -x $b ]] || die "$b is missing: run 'make build' (or 'make demo', which builds first)"
done
[[ $seconds =~ ^[0-9]+$ && $seconds -gt 0 ]] || die "DEMO_SECONDS=$seconds: want a whole number of seconds"
[[ $drain_timeout =~ ^[0-9]+$ ]] || die "DEMO_DRAIN_TIMEOUT=$drain_timeout: want a whole number of seconds"

# checkaddr refuses anything but 127.0.0.1, and a fixed port that is taken.
checkaddr() { # name addr
  local host=${2%:*} port=${2##*:}
  [[ $host == 127.0.0.1 && $port =~ ^[0-9]+$ ]] || die "$1=$2: want 127.0.0.1:PORT (the demo binds only to loopback)"
  if [[ $port != 0 ]] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    die "$1=$2: something already listens there; stop it, or set $1=127.0.0.1:0 (a free port)"
  fi
}
checkaddr DEMO_BEATS_ADDR "$beats_addr"
checkaddr DEMO_ES_ADDR "$es_addr"

work=$(mktemp -d "${TMPDIR:-/tmp}/logpond-demo.XXXXXX")
logpond_pid='' esserver_pid=''
cleanup() {
  local rc=$?
  # Whatever still runs was started here; stop it by its pid.
  for pid in $logpond_pid $esserver_pid; do
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  done
  if [[ ${DEMO_KEEP:-0} == 1 ]]; then
    echo "work directory kept: $work"
  else
    rm -rf "$work"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# waitfor waits until file has a line matching the extended regex and
# prints the first match; it fails when pid exits first or after timeout s.
waitfor() { # file regex pid timeout name
  local i m
  for ((i = 0; i < $4 * 10; i++)); do
    if m=$(grep -m1 -oE "$2" "$1" 2>/dev/null); then
      printf '%s\n' "$m"
      return 0
    fi
    if ! kill -0 "$3" 2>/dev/null; then
      echo "demo: $5 exited before it was ready; its log:" >&2
      sed 's/^/  /' "$1" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "demo: $5 not ready after $4 s; its log:" >&2
  sed 's/^/  /' "$1" >&2
  return 1
}

# sink_count prints the number of documents esserver holds (GET /_count
# over bash's /dev/tcp, so curl is not needed).
sink_count() {
  local resp
  resp=$(exec 2>/dev/null 3<>"/dev/tcp/${es_hostport%:*}/${es_hostport##*:}" &&
    printf 'GET /_count HTTP/1.0\r\nHost: %s\r\n\r\n' "$es_hostport" >&3 &&
    cat <&3) || return 1
  [[ $resp =~ \"count\":([0-9]+) ]] || return 1
  printf '%s\n' "${BASH_REMATCH[1]}"
}

mkdir "$work/journal" "$work/ledger"
# O_DIRECT is refused by some file systems a temporary directory may be on
# (older tmpfs); the ledger then runs buffered, which a demo can afford.
direct_io=true
if ! dd if=/dev/zero of="$work/.direct-io-probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null; then
  direct_io=false
fi
rm -f "$work/.direct-io-probe"

echo "== logpond demo: beatsbench → logpond (journal → ledger) → Elasticsearch output → esserver =="
echo "work directory  $work"
echo "                journal/ and ledger/ share one file system here, which is fine for a demo;"
echo "                production wants two devices (logpond logs a warning about it)."
[[ $direct_io == true ]] || echo "                this file system refuses O_DIRECT: the ledger runs with direct_io = false."

"$esserver_bin" -listen "$es_addr" -reject429 "$reject429" -seed 1 >"$work/esserver.out" 2>"$work/esserver.log" &
esserver_pid=$!
es_url=$(waitfor "$work/esserver.log" 'url=http://[0-9.]+:[0-9]+' "$esserver_pid" 30 esserver) || exit 1
es_url=${es_url#url=}
es_hostport=${es_url#http://}
echo "esserver        $es_url (in-repo Elasticsearch test server; answers 429 to a bulk item with probability $reject429)"

cat >"$work/logpond.toml" <<TOML
# Written by tools/demo.sh.
[journal]
dir = "$work/journal"
segment_bytes = "16MiB"
max_bytes = "256MiB"

[ledger]
dir = "$work/ledger"
segment_bytes = "64MiB"
max_bytes = "2GiB"
direct_io = $direct_io

[input.beats]
listen = "$beats_addr"

[output.elasticsearch]
hosts = ["$es_url"]
flush_interval = "200ms"
# Short backoff, so the retries of the rejected items do not dominate a
# 15-second run.
retry_initial_interval = "50ms"
retry_max_interval = "1s"

[admin]
listen = ""

[log]
level = "info"
TOML

"$logpond_bin" -config "$work/logpond.toml" >"$work/logpond.log" 2>&1 &
logpond_pid=$!
beats=$(waitfor "$work/logpond.log" 'msg="beats input listening" addr=[0-9.]+:[0-9]+' "$logpond_pid" 60 logpond) || exit 1
beats=${beats##*addr=}
echo "logpond         pid $logpond_pid, beats input on $beats, configuration $work/logpond.toml"

echo
rate_label="$rate events/s"
[[ $rate == 0 ]] && rate_label="as fast as acknowledged"
echo "== load: beatsbench, $connections connections × $batch-event batches of $event_size bytes, $rate_label, $seconds s =="
"$beatsbench_bin" -addr "$beats" -connections "$connections" -batch "$batch" -event-size "$event_size" \
  -rate "$rate" -duration "${seconds}s" >"$work/beatsbench.out" 2>&1 || {
  cat "$work/beatsbench.out" >&2
  die "beatsbench failed"
}
cat "$work/beatsbench.out"
echo "(events/s and MB/s: acknowledged throughput; p50/p99/p999: latency from sending a batch to its ACK,"
echo " which logpond sends only after the journal fsynced the batch)"
acked=$(grep -oE '^acknowledged events=[0-9]+' "$work/beatsbench.out" | cut -d= -f2) ||
  die "beatsbench printed no 'acknowledged events=' line"

echo
echo "== sink: waiting for esserver to hold the $acked acknowledged events =="
# now prints the time in milliseconds (bash 5's EPOCHREALTIME, else whole seconds).
now() { if [[ -n ${EPOCHREALTIME:-} ]]; then local t=${EPOCHREALTIME/[.,]/}; echo $((t / 1000)); else echo $((SECONDS * 1000)); fi; }
start=$(now)
n=0
while :; do
  n=$(sink_count) || die "cannot read $es_url/_count"
  if ((n >= acked)); then
    echo "sink holds $n documents; beatsbench had $acked events acknowledged (caught up $(($(now) - start)) ms after the load ended)"
    break
  fi
  if (($(now) - start >= drain_timeout * 1000)); then
    echo "sink holds $n documents; beatsbench had $acked events acknowledged (not caught up after $drain_timeout s; the end of logpond's log:)"
    tail -n 10 "$work/logpond.log" | sed 's/^/  /'
    break
  fi
  sleep 0.2
done

echo
echo "== ledgerctl stat =="
ledgerctl_rc=0
if [[ -x $ledgerctl_bin ]]; then
  "$ledgerctl_bin" -config "$work/logpond.toml" stat || ledgerctl_rc=$?
  ((ledgerctl_rc == 0)) || echo "demo: ledgerctl stat failed (exit $ledgerctl_rc)" >&2
else
  echo "($ledgerctl_bin is not built yet: no store statistics in this run)"
fi

echo
echo "== stop =="
logpond_rc=0
kill -TERM "$logpond_pid"
wait "$logpond_pid" || logpond_rc=$?
logpond_pid=''
echo "logpond stopped on SIGTERM, exit code $logpond_rc"
if grep -qE 'level=(WARN|ERROR)' "$work/logpond.log"; then
  echo "logpond's warnings and errors:"
  grep -E 'level=(WARN|ERROR)' "$work/logpond.log" | sed 's/^/  /'
fi
esserver_rc=0
kill -TERM "$esserver_pid"
wait "$esserver_pid" || esserver_rc=$?
esserver_pid=''
cat "$work/esserver.out"

echo
fail=0
if ((n != acked)); then
  echo "FAIL: the sink holds $n documents, but $acked events were acknowledged"
  fail=1
fi
if ((logpond_rc != 0)); then
  echo "FAIL: logpond exited $logpond_rc on SIGTERM (want 0)"
  fail=1
fi
if ((esserver_rc != 0)); then
  echo "FAIL: esserver exited $esserver_rc on SIGTERM (want 0)"
  fail=1
fi
if ((ledgerctl_rc != 0)); then
  echo "FAIL: ledgerctl stat exited $ledgerctl_rc"
  fail=1
fi
if ((fail)); then
  exit 1
fi
echo "OK: the sink holds exactly as many documents as events were acknowledged; logpond stopped cleanly."
