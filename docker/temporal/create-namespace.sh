#!/bin/sh
# One-shot job (docker-compose.yml service temporal-namespace): waits until the server answers,
# then registers the namespace floe uses if it is not there yet, and floe's search attributes
# (FloeTable, FloeKind, FloeIngestId: contract/index.ts SEARCH_ATTRIBUTES; what `floe setup` does).
set -eu
NAMESPACE=${DEFAULT_NAMESPACE:-default}
: "${TEMPORAL_ADDRESS:?}"

tries=0
until temporal operator cluster health --address "$TEMPORAL_ADDRESS"; do
  tries=$((tries + 1))
  [ "$tries" -lt 30 ] || { echo "Temporal at $TEMPORAL_ADDRESS not healthy after $tries tries" >&2; exit 1; }
  sleep 2
done
temporal operator namespace describe -n "$NAMESPACE" --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1 ||
  temporal operator namespace create -n "$NAMESPACE" --retention 72h --address "$TEMPORAL_ADDRESS"
# One name per call: the CLI given several registers only the first. Re-creating one is a no-op.
for name in FloeTable FloeKind FloeIngestId; do
  temporal operator search-attribute create --name "$name" --type Keyword -n "$NAMESPACE" --address "$TEMPORAL_ADDRESS"
done
echo "namespace $NAMESPACE ready"
