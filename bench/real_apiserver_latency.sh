#!/usr/bin/env bash
# Drift-correction latency and burst lag of the event-driven reconciler on a REAL kube-apiserver, read from
# the API server's own audit log (requestReceivedTimestamp, microseconds), never by polling with kubectl.
# Optional, never in CI: needs a local kube-apiserver kit (start.sh/stop.sh/kubeconfig/bin/kubectl in $REALK8S)
# and the audit readers latency.py and burst.py (in $PEERS, with audit-policy.yaml), which also measure the
# peers (a bare watch+PATCH loop and a kopf operator) the same way.
# Usage: REALK8S=~/.realk8s PEERS=path/to/peers bench/real_apiserver_latency.sh [VENV]   (VENV: memcached-gitops[cluster])
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$here/.venv}
audit=/tmp/memcached-gitops-audit.log; rm -f "$audit"
kc=$REALK8S/kubeconfig
k() { "$REALK8S/bin/kubectl" --kubeconfig "$kc" "$@"; }
EXTRA_KAS_ARGS="--audit-policy-file=$PEERS/audit-policy.yaml --audit-log-path=$audit --audit-log-mode=blocking" "$REALK8S/start.sh" >/dev/null
trap '"$REALK8S/stop.sh" >/dev/null 2>&1 || true' EXIT
k apply --server-side -f "$here/schemas/memcached-crd.yaml" >/dev/null
k wait --for=condition=Established crd/memcacheds.cache.example.com >/dev/null
k create namespace ours >/dev/null
# c0..c19 with size i % 3 + 1: what latency.py expects after reconciliation
for i in $(seq 0 19); do printf -- '---\napiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: c%s}\nspec: {size: %s}\n' "$i" $((i % 3 + 1)); done | k apply -n ours -f - >/dev/null
"$venv/bin/memcached-gitops" reconcile --interval 10m --namespace ours --kubeconfig "$kc" --lease-namespace ours --metrics-port 0 --health-probe-port 0 >/tmp/memcached-gitops-reconcile.log 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ "$(k get deployments -n ours --no-headers 2>/dev/null | wc -l)" -ge 20 ] && break; sleep 0.2; done
sleep 3
echo "== memcached-gitops reconcile --interval 10m (event-driven)"
"$venv/bin/python" "$PEERS/latency.py" "$audit" "$REALK8S/bin/kubectl" "$kc" ours 20 | tail -1
for i in $(seq 0 199); do printf -- '---\napiVersion: cache.example.com/v1alpha1\nkind: Memcached\nmetadata: {name: burst%s}\nspec: {size: 1}\n' "$i"; done | k apply -n ours -f - >/dev/null
sleep 10
"$venv/bin/python" "$PEERS/burst.py" "$audit" ours 200
n0=$(wc -l <"$audit"); sleep 20
tail -n +"$((n0 + 1))" "$audit" | "$venv/bin/python" -c '
import collections, json, sys
c = collections.Counter()
for line in sys.stdin:
    e = json.loads(line)
    if e.get("stage") == "ResponseComplete" and e.get("userAgent", "").startswith("memcached-gitops"):
        c[e["verb"] + " " + str((e.get("objectRef") or {}).get("resource"))] += 1
print("quiet 20 s, requests by memcached-gitops:", dict(c) or "none")'
echo "RSS after the burst: $(ps -o rss= -p "$pid") KiB"
kill -TERM "$pid"; wait "$pid" || true
echo "reproduce: REALK8S=$REALK8S PEERS=$PEERS bench/real_apiserver_latency.sh $venv"
