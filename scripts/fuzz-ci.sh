#!/usr/bin/env bash
# Every libFuzzer target of tests/fuzz for a short while each (default 20 s; HUMUS_FUZZ_SECONDS=n to change),
# through scripts/fuzz.sh, as many at once as the machine has cores (a fuzzer uses one; HUMUS_FUZZ_JOBS=n to
# change). Fails when any target finds a crash, a leak or a timeout, printing that target's whole log.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${HUMUS_FUZZ_SECONDS:-20}
jobs=${HUMUS_FUZZ_JOBS:-$(nproc)}
nice -n 10 cmake --preset fuzz >/dev/null
nice -n 10 cmake --build --preset fuzz >/dev/null
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
run() {  # one target, its log and exit status kept for the report below
  local rc=0
  HUMUS_FUZZ_NO_BUILD=1 scripts/fuzz.sh "$1" "$seconds" >"$logs/$1.log" 2>&1 || rc=$?
  echo $rc >"$logs/$1.rc"
}
for target in $(scripts/fuzz.sh --list); do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  run "$target" &
done
wait
failed=()
for target in $(scripts/fuzz.sh --list); do
  if [ "$(cat "$logs/$target.rc")" -eq 0 ]; then
    grep -E '^(fuzz:|stat::(number_of_executed_units|average_exec_per_sec|new_units_added)|#[0-9]+ +DONE)' \
      "$logs/$target.log" || true
  else
    cat "$logs/$target.log"
    failed+=("$target")
  fi
done
if ((${#failed[@]})); then
  echo "fuzz-ci: failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz-ci: every target ran ${seconds}s without a finding"
