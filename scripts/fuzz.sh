#!/usr/bin/env bash
# Runs one libFuzzer target of tests/fuzz for SECONDS (default 60), building the fuzz preset (clang, ASan +
# UBSan) first when needed. The committed seed corpus tests/fuzz/corpus/TARGET is only read: new interesting
# inputs go to a scratch corpus (build/fuzz/work/TARGET/corpus, kept between runs so each run starts where the
# last one stopped), crashes to build/fuzz/work/TARGET/ as crash-*, leak-*, timeout-* files. A crash is
# committed into the seed corpus only together with its fix, as a regression that the normal build replays.
#
#   scripts/fuzz.sh TARGET [SECONDS] [libFuzzer flags...]     e.g. scripts/fuzz.sh url 600
#   scripts/fuzz.sh --list
#
# Environment: HUMUS_FUZZ_WORK=dir for the scratch space instead of build/fuzz/work; HUMUS_FUZZ_NO_BUILD=1 to
# run the binary as built (scripts/fuzz-ci.sh builds every target once first).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

targets() { sed -n 's/^ *\(.*\)_fuzz\.cc$/\1/p' < <(ls tests/fuzz) | sort; }
if [ "${1:-}" = "--list" ]; then
  targets
  exit 0
fi
[ $# -ge 1 ] || { echo "usage: scripts/fuzz.sh TARGET [SECONDS] [libFuzzer flags...] (targets: $(targets | xargs))" >&2; exit 2; }
target=$1
seconds=${2:-60}
shift $(($# >= 2 ? 2 : 1))
[ -f "tests/fuzz/${target}_fuzz.cc" ] || { echo "fuzz: no target '$target' (targets: $(targets | xargs))" >&2; exit 2; }
command -v clang++ >/dev/null 2>&1 || { echo "fuzz: clang++ is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }

if [ -z "${HUMUS_FUZZ_NO_BUILD:-}" ]; then
  [ -f build/fuzz/build.ninja ] || nice -n 10 cmake --preset fuzz >/dev/null
  nice -n 10 cmake --build --preset fuzz --target "fuzz_$target" >/dev/null
fi

work=${HUMUS_FUZZ_WORK:-$root/build/fuzz/work}/$target
mkdir -p "$work/corpus"
# Leaks fail the run too; a UBSan report stops it like a crash (-fno-sanitize-recover=all).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:handle_abort=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# A dictionary of the format's words where one helps the mutator past its keywords.
dict=()
case $target in
  settings_json | settings_check | upstreams) dict=(-dict="$root/tests/fuzz/dict/settings.dict") ;;
  response_head | url) dict=(-dict="$root/tests/fuzz/dict/http.dict") ;;
esac
echo "fuzz: $target for ${seconds}s, scratch corpus $work/corpus"
set +e
nice -n 10 "$root/build/fuzz/tests/fuzz/fuzz_$target" -max_total_time="$seconds" -print_final_stats=1 \
  -timeout=10 -rss_limit_mb=1024 -artifact_prefix="$work/" "${dict[@]}" "$@" "$work/corpus" "$root/tests/fuzz/corpus/$target"
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "fuzz: $target failed (exit $rc); inputs in $work/ (crash-*, leak-*, timeout-*). Fix it, then copy the" \
    "input into tests/fuzz/corpus/$target/ as a regression." >&2
fi
exit $rc
