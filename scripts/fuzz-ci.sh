#!/usr/bin/env bash
# Every libFuzzer target of tests/fuzz for a short while each (default 20 s; HUMUS_FUZZ_SECONDS=n to change),
# one after the other, through scripts/fuzz.sh. Fails when any target finds a crash, a leak or a timeout.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${HUMUS_FUZZ_SECONDS:-20}
nice -n 10 cmake --preset fuzz >/dev/null
nice -n 10 cmake --build --preset fuzz >/dev/null
log=$(mktemp)
trap 'rm -f "$log"' EXIT
failed=()
for target in $(scripts/fuzz.sh --list); do
  rc=0
  HUMUS_FUZZ_NO_BUILD=1 scripts/fuzz.sh "$target" "$seconds" >"$log" 2>&1 || rc=$?
  # The summary lines; the whole log when the target failed.
  if [ $rc -eq 0 ]; then
    grep -E '^(fuzz:|stat::(number_of_executed_units|average_exec_per_sec|new_units_added)|#[0-9]+ +DONE)' "$log" || true
  else
    cat "$log"
    failed+=("$target")
  fi
done
if ((${#failed[@]})); then
  echo "fuzz-ci: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz-ci: every target ran ${seconds}s without a finding"
