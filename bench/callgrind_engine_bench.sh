#!/usr/bin/env bash
# Where humus_http's extra cost per request goes, in instructions (deterministic, unlike time on a shared
# machine): runs raw-seq and humus-seq of engine_bench under callgrind at two request counts, so set-up,
# warm-up, connection and TLS handshake cancel out, and prints per request: the instructions of each, the
# difference, and the functions whose inclusive cost grew most (humus-only functions first of all).
#
#   bench/callgrind_engine_bench.sh [h1|h2]...      (default: h1 h2)
#
# CG_ROWS="base other..." compares other rows of engine_bench with a base other than raw-seq, e.g.
# CG_ROWS="humus-seq humus-seq-traced humus-seq-header" for what telemetry costs in instructions (issue 15),
# or CG_ROWS="raw-multi humus-async" for the asynchronous engine against curl_multi (engine_bench's default
# of 64 in flight; these two rows are collected whole, the event loop's thread included).
#
# Needs valgrind (installed when missing). Uses bench/run_engine_bench.sh for the server and the build; set
# BENCH_BIN to profile another engine_bench binary. Roughly 10k instructions are 1 us on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
protos=("$@")
((${#protos[@]})) || protos=(h1 h2)
n1=${CG_N1:-1000}
n2=${CG_N2:-5000}
top=${CG_TOP:-30}

if ! command -v valgrind >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends valgrind >/dev/null
fi

out=$(mktemp -d -t humus-callgrind.XXXXXX)
trap 'rm -rf "$out"' EXIT
build=${BENCH_BUILD:-1}
for proto in "${protos[@]}"; do
  for name in ${CG_ROWS:-raw-seq humus-seq}; do
    # A sequential row is collected inside its run() alone; the others also work on the event loop's
    # thread (humus-async) or start transfers outside run(), so the whole process is collected: the two
    # request counts cancel set-up and teardown either way.
    case $name in
      raw-seq) collect="--toggle-collect=*RawSequential::run*" ;;
      humus-seq | humus-seq-traced | humus-seq-header) collect="--toggle-collect=*HumusSequential::run*" ;;
      *) collect="" ;;
    esac
    for n in "$n1" "$n2"; do
      BENCH_BUILD=$build BENCH_WRAP="valgrind --tool=callgrind --callgrind-out-file=$out/$proto-$name-$n.out $collect" \
        "$root/bench/run_engine_bench.sh" --only "$proto,$name" --rounds 1 --requests "$n" --warmup 200 \
        >"$out/$proto-$name-$n.log" 2>&1 || { cat "$out/$proto-$name-$n.log" >&2; exit 1; }
      build=0
      callgrind_annotate --inclusive=yes --threshold=100 "$out/$proto-$name-$n.out" >"$out/$proto-$name-$n.txt" 2>/dev/null
    done
  done
done

python3 - "$out" "$n1" "$n2" "$top" "${CG_ROWS:-raw-seq humus-seq}" "${protos[@]}" <<'EOF'
import re, sys
out, n1, n2, top, names, protos = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5].split(), sys.argv[6:]

def load(path):
    costs = {}
    for line in open(path):
        m = re.match(r'\s*([\d,]+) \([^)]*\)\s+(\S.*)$', line)
        if not m or m.group(2).startswith('=>'):
            continue
        fn = re.sub(r'^[^\s:]*:(?!:)', '', m.group(2), count=1)  # drop the "file:" prefix
        fn = fn.replace('std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >', 'std::string')
        costs[fn] = costs.get(fn, 0) + int(m.group(1).replace(',', ''))
    return costs

def per_request(proto, name):
    a, b = load(f'{out}/{proto}-{name}-{n1}.txt'), load(f'{out}/{proto}-{name}-{n2}.txt')
    return {k: (b.get(k, 0) - a.get(k, 0)) / (n2 - n1) for k in set(a) | set(b)}

for proto, other in ((p, o) for p in protos for o in names[1:]):
    raw, humus = per_request(proto, names[0]), per_request(proto, other)
    r, h = raw.get('PROGRAM TOTALS', 0), humus.get('PROGRAM TOTALS', 0)
    print(f'\n{proto}: instructions per request  {names[0]} {r:,.0f}  {other} {h:,.0f}  extra {h - r:+,.0f} ({h / r:.3f}x)')
    print(f'  inclusive per request, largest growth first ({names[0]}, {other}, delta); libcurl internals have no symbols')
    rows = sorted(set(raw) | set(humus), key=lambda k: -(humus.get(k, 0) - raw.get(k, 0)))
    shown = 0
    for k in rows:
        d = humus.get(k, 0) - raw.get(k, 0)
        if k == 'PROGRAM TOTALS' or d >= h - r - 1 or abs(d) < 50:
            continue  # the call chain above everything, and noise
        print(f'  {raw.get(k, 0):9,.0f} {humus.get(k, 0):9,.0f} {d:+9,.0f}  {k[:140]}')
        shown += 1
        if shown == top:
            break
EOF
