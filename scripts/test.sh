#!/usr/bin/env bash
# `npm test`: bring the local stack up (installs on first use under $FLOE_HOME), typecheck,
# lint, format check (prettier), then every unit and integration test with node's runner. Exits non-zero if any step
# fails; all steps run so one report shows every failure.
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

# Without a stack the integration tests cannot run; stop here with the stack's own error.
step "stack up" npx tsx cli/stack-main.ts stack up || exit 1
step "typecheck" npx tsc --noEmit -p .
step "lint" npx eslint .
step "format" npx prettier --check "**/*.{ts,mjs}"

# find, not a shell glob: new test files are picked up without editing this script, and the
# lists are sorted so runs are repeatable. Unit tests are pure (or start their own in-process
# Temporal test server), so two run at once; integration tests share the one stack (and some
# restart its services), so they run one at a time.
mapfile -t units < <(find test/unit -name '*.test.ts' -type f 2>/dev/null | LC_ALL=C sort)
mapfile -t integrations < <(find test/integration -name '*.test.ts' -type f 2>/dev/null | LC_ALL=C sort)
if [ "${#units[@]}" -eq 0 ] || [ "${#integrations[@]}" -eq 0 ]; then
  echo "=== tests: FAILED (no test files found under test/unit or test/integration)"
  exit 1
fi
step "unit tests (${#units[@]} files)" node --import tsx --test --test-concurrency=2 --test-timeout=600000 "${units[@]}"
step "integration tests (${#integrations[@]} files)" node --import tsx --test --test-concurrency=1 --test-timeout=600000 "${integrations[@]}"

exit $status
