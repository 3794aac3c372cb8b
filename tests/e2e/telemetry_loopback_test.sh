#!/usr/bin/env bash
# Least privilege (issue 8): telemetry listens on loopback unless an address is named. Runs `hpr run` with the
# generator and `--prometheus PORT` (a bare port), checks with ss that the port is bound to 127.0.0.1 only and
# that /metrics answers there. Usage: telemetry_loopback_test.sh HPR_BINARY. Exit 77 (skip) without ss/curl.
set -uo pipefail
hpr=${1:?usage: telemetry_loopback_test.sh HPR_BINARY}
command -v ss >/dev/null || { echo "SKIP: ss not installed"; exit 77; }
port=$((20000 + $$ % 20000))
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
log=$(mktemp)
"$hpr" run --app ipv4,md5 --in gen --packets 0 --rate-pps 1000 --flows 10 --out null --devices none --native 1 --duration 20 \
  --prometheus "$port" -q >"$log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -f "$log"' EXIT
for _ in $(seq 1 200); do ss -ltnH "sport = :$port" | grep -q . && break; sleep 0.1; done
listening=$(ss -ltnH "sport = :$port" | awk '{print $4}')
echo "listening on: ${listening:-nothing}"
[[ -n $listening ]] || { echo "FAIL: nothing listens on port $port"; cat "$log"; exit 1; }
if grep -qv "^127\.0\.0\.1:$port$" <<<"$listening"; then echo "FAIL: telemetry bound beyond loopback: $listening"; exit 1; fi
if command -v curl >/dev/null; then
  curl -sf "http://127.0.0.1:$port/metrics" | grep -q hpr_rx_packets_total || { echo "FAIL: /metrics did not answer"; exit 1; }
  # A chain's events by app, once the first status tick has set them.
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$port/metrics" | grep -q 'hpr_app_events_total{app="md5",event="digests"}' && break
    sleep 0.1
  done
  curl -sf "http://127.0.0.1:$port/metrics" | grep -q 'hpr_app_events_total{app="ipv4",event="forwarded"}' ||
    { echo "FAIL: /metrics lacks the chain's events by app"; curl -sf "http://127.0.0.1:$port/metrics" | grep app_events; exit 1; }
fi
echo "PASS: telemetry on 127.0.0.1:$port only"
