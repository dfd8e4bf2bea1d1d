#!/usr/bin/env bash
# `npm test`: bring the local stack up (installs on first use under $FLOE_HOME), typecheck,
# lint, format check (prettier), then every unit and integration test with node's runner. Exits non-zero if any step
# fails; all steps run so one report shows every failure.
#
# On a 2-core machine (2026-12-07) the steps used to take 25 minutes one after the other, most of
# it integration tests waiting (commit intervals, drains, worker and Python start-up). Now:
#   1. stack up, and the workflows bundled once for all the unit test files that run them;
#   2. typecheck, lint, format and the unit tests side by side, and beside them, one at a time,
#      the integration tests that must have the stack to themselves but not the CPU: a file says
#      so with a line `// npm test: stack to itself (<why>)` (it stops or restarts a service);
#      nothing else uses the stack meanwhile (unit tests start their own Temporal test servers);
#   3. once all of those are done, the integration tests that can share the stack,
#      $FLOE_TEST_CONCURRENCY files at a time (default 3: the two cores are busy);
#   4. the integration tests that must have the stack and the CPU to themselves, one at a time: a
#      file says so with a line `// npm test: alone (<why>)` (it restarts services under deadlines
#      or asserts how fast something fails, which the load of other files would make flaky).
# Each background step's output is held back and printed as one block when it is awaited.
set -uo pipefail
cd "$(dirname "$0")/.."

status=0
# npm puts node_modules/.bin first on PATH, so this is the Node 24 that `npm ci` installed.
echo "=== node $(node --version) ($(command -v node))"
step() {
  local name=$1; shift
  local t0=$SECONDS
  echo "=== $name"
  if "$@"; then
    echo "=== $name: ok ($((SECONDS - t0)) s)"
  else
    local rc=$?
    echo "=== $name: FAILED (exit $rc, $((SECONDS - t0)) s)"
    status=1
    return $rc
  fi
}

# A step in the background: `start` runs it with its output to a file, `finish` waits for it and
# prints that output as one block, framed like step's.
held=$(mktemp -d "${TMPDIR:-/tmp}/floe-test-XXXXXX")
trap 'rm -rf "$held"' EXIT
declare -A started=()
start() {
  local name=$1; shift
  local out="$held/${#started[@]}"
  (
    t0=$SECONDS
    "$@" >"$out.log" 2>&1
    rc=$?
    echo "$((SECONDS - t0))" >"$out.s"
    exit $rc
  ) &
  started[$name]="$! $out"
}
finish() {
  local name=$1 pid out rc
  read -r pid out <<<"${started[$name]}"
  wait "$pid"
  rc=$?
  echo "=== $name"
  cat "$out.log"
  if [ $rc -eq 0 ]; then
    echo "=== $name: ok ($(cat "$out.s") s)"
  else
    echo "=== $name: FAILED (exit $rc, $(cat "$out.s" 2>/dev/null || echo '?') s)"
    status=1
  fi
}

# Without a stack the integration tests cannot run; stop here with the stack's own error.
# --profile spark: PySpark + Iceberg's Spark runtime for spark-maintenance.test.ts (first time only:
# ~430 MB under $FLOE_HOME/spark, ~2 minutes; a no-op once installed).
# --profile debezium: Kafka Connect + Debezium's PostgreSQL connector and a wal_level=logical
# PostgreSQL for debezium-cdc.test.ts (first time: ~45 MB of jars from Maven Central and an initdb,
# ~15 s here; then the two services start, ~10 s; the test itself takes ~45 s).
step "stack up" npx tsx cli/stack-main.ts stack up --profile spark debezium || exit 1

# find, not a shell glob: new test files are picked up without editing this script, and the
# lists are sorted so runs are repeatable. Unit tests are pure (or start their own in-process
# Temporal test server), so several run at once.
mapfile -t units < <(find test/unit -name '*.test.ts' -type f 2>/dev/null | LC_ALL=C sort)
mapfile -t integrations < <(find test/integration -name '*.test.ts' -type f 2>/dev/null | LC_ALL=C sort)
if [ "${#units[@]}" -eq 0 ] || [ "${#integrations[@]}" -eq 0 ]; then
  echo "=== tests: FAILED (no test files found under test/unit or test/integration)"
  exit 1
fi
# The longest files (as measured running 4 units or 3 integration files at a time) start first,
# longest first, so that none of them starts last and runs on alone after the others are done;
# the rest follow in sorted order. A name that no longer exists is ignored, and a new slow file
# only costs time until it is added.
first=(
  test/unit/workflows-ingest.test.ts test/unit/workflows-maintenance.test.ts test/unit/workflows-topics.test.ts
  test/unit/workflows-route.test.ts test/unit/parquet-flat.test.ts test/unit/workflows-replay.test.ts
  test/unit/iceberg-transaction.test.ts
  test/integration/upsert.test.ts test/integration/upsert-compact.test.ts
  test/integration/routing-many-tables.test.ts test/integration/kafka-consumer-pool.test.ts
  test/integration/spark-maintenance.test.ts test/integration/fuzz-ingest.test.ts
  test/integration/maintenance-kills-after-commit.test.ts test/integration/maintenance-foreign-deletes.test.ts
  test/integration/time-bounds.test.ts
  test/integration/pack.test.ts test/integration/payload-limit.test.ts test/integration/ingest.test.ts
  test/integration/interop-concurrency.test.ts test/integration/topics.test.ts test/integration/registry-formats.test.ts
  test/integration/maintenance-kills.test.ts test/integration/interop-read.test.ts test/integration/maintenance-compact.test.ts
  test/integration/maintenance-orphans.test.ts test/integration/maintenance-compact-large.test.ts
  test/integration/routing-avro.test.ts test/integration/catalog-secrets-logs.test.ts
  test/integration/interop-pyiceberg-write.test.ts
)
longest_first() {
  local f
  local -A given=()
  for f in "$@"; do given[$f]=1; done
  for f in "${first[@]}"; do
    if [ -n "${given[$f]:-}" ]; then
      echo "$f"
      unset "given[$f]"
    fi
  done
  for f in "$@"; do if [ -n "${given[$f]:-}" ]; then echo "$f"; fi; done
}
mapfile -t units < <(longest_first "${units[@]}")
mapfile -t integrations < <(longest_first "${integrations[@]}")
# Integration tests share the one stack. Most make their own topics, tables, task queues,
# namespaces and ports, so several run at once; the files marked `// npm test: stack to itself (…)`
# run beside the unit tests, and those marked `// npm test: alone (…)` after the rest, one at a time.
alone=() together=() stack_only=()
for f in "${integrations[@]}"; do
  if grep -q '^// npm test: alone' "$f"; then
    alone+=("$f")
  elif grep -q '^// npm test: stack to itself' "$f"; then
    stack_only+=("$f")
  else
    together+=("$f")
  fi
done
concurrency=${FLOE_TEST_CONCURRENCY:-3}
# node's test runner (a process per file), starting the files in the order given (`node --test`
# sorts them), with the spec report.
runner=(node --import tsx scripts/run-tests.ts)

# One bundle of the workflows for every unit test file that runs them, made before they start
# (test/support/workflow-env.ts: testWorkflowBundle); a file bundles its own if this step failed.
bundle_file="$held/workflow-bundle.js"
if step "workflow bundle" node --import tsx test/support/write-workflow-bundle.ts "$bundle_file"; then
  export FLOE_TEST_WORKFLOW_BUNDLE=$bundle_file
fi
start "typecheck" npx tsc --noEmit -p .
start "lint" npm run --silent lint
start "format" npx prettier --check "**/*.{ts,mjs}"
start "unit tests (${#units[@]} files, 4 at a time)" "${runner[@]}" 4 600000 "${units[@]}"
# (Guarded: a group may be empty.)
stack_only_step="integration tests (${#stack_only[@]} files, one at a time beside the unit tests: ${stack_only[*]##*/})"
if [ "${#stack_only[@]}" -gt 0 ]; then
  start "$stack_only_step" "${runner[@]}" 1 600000 "${stack_only[@]}"
fi
finish "unit tests (${#units[@]} files, 4 at a time)"
if [ "${#stack_only[@]}" -gt 0 ]; then
  finish "$stack_only_step"
fi
# The checks finish before the integration tests start: run beside them (2026-12-07, clean clone),
# they made the integration phase 918 s instead of ~600 and a fresh worker missed visibility's
# first-commit wait; the total was no shorter (the two cores were the bound either way).
finish "typecheck"
finish "lint"
finish "format"

if [ "${#together[@]}" -gt 0 ]; then
  step "integration tests (${#together[@]} files, $concurrency at a time)" "${runner[@]}" "$concurrency" 600000 "${together[@]}"
fi
if [ "${#alone[@]}" -gt 0 ]; then
  step "integration tests (${#alone[@]} files, one at a time: ${alone[*]##*/})" "${runner[@]}" 1 600000 "${alone[@]}"
fi

exit $status
