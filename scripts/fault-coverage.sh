#!/usr/bin/env bash
# fault-coverage.sh [--allow-todo] — checks tests/fault-coverage.md against the tests themselves.
#
# Every id F01..F134 and S1..S27 has exactly one row, as does each later id the table lists (a number a
# session set aside and did not use leaves a gap there); a `tested` row lists at least one test, an `n/a` row
# says why; every listed test (`file::Name`) is defined in that file (C++ TEST/TEST_F/TEST_P, a libFuzzer
# target's `extern "C" int LLVMFuzzerTestOneInput`, Python `def`, Go `func`, Rust `fn`) and carries the row's
# id in its name or in the comment lines right above it.
# Prints the totals. Exits 1 when a row is missing, malformed or names a test that is missing or does not
# carry its id; `todo` rows count as missing too, unless --allow-todo (they are still listed).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
table=$root/tests/fault-coverage.md
allow_todo=0
for arg in "$@"; do
  case $arg in
    --allow-todo) allow_todo=1 ;;
    *) echo "usage: $0 [--allow-todo]" >&2; exit 2 ;;
  esac
done

errors=0
fail() { echo "fault-coverage: $*" >&2; errors=$((errors + 1)); }
trim() {
  local s=$1
  s=${s#"${s%%[![:space:]]*}"}
  printf '%s' "${s%"${s##*[![:space:]]}"}"
}

declare -A status_of=()
declare -a todo_ids=()

# carries FILE NAME ID: NAME is defined in FILE and the id is in its name or the comments right above it.
carries() {
  local file=$1 name=$2 id=$3 line
  line=$(grep -nE "(TEST(_F|_P)?\([A-Za-z0-9_]+, *${name}\)|extern \"C\" int ${name}\(|def ${name}\(|func ${name}\(|fn ${name}\()" \
    "$root/$file" | head -n1 | cut -d: -f1) || true
  if [[ -z $line ]]; then
    fail "$id: $file has no test $name"
    return
  fi
  if [[ $name =~ (^|[^0-9])${id}([^0-9]|$) ]]; then return; fi
  # The contiguous block of comment lines (// or #, decorators skipped) above the definition.
  if awk -v stop="$line" -v id="$id" '
      NR < stop { lines[NR] = $0 }
      END {
        for (i = stop - 1; i > 0; i--) {
          l = lines[i]
          if (l ~ /^[ \t]*@/) continue
          if (l !~ /^[ \t]*(\/\/|#)/) break
          if (l ~ ("(^|[^0-9A-Za-z])" id "([^0-9]|$)")) exit 0
        }
        exit 1
      }' "$root/$file"; then
    return
  fi
  fail "$id: $file::$name carries no '$id' in its name or in a comment right above it"
}

while IFS= read -r row; do
  [[ $row =~ ^\|\ *([FS][0-9]+)\ *\| ]] || continue
  IFS='|' read -r _ id title status tests note _ <<<"$row"
  id=$(trim "$id")
  status=$(trim "$status")
  note=$(trim "$note")
  if [[ -n ${status_of[$id]:-} ]]; then
    fail "$id has two rows"
    continue
  fi
  status_of[$id]=$status
  refs=$(grep -oE '`[^`]+::[^`]+`' <<<"$tests" | tr -d '`' || true)
  case $status in
    tested) [[ -n $refs ]] || fail "$id is tested but lists no test" ;;
    n/a) [[ -n $note ]] || fail "$id does not apply but says not why" ;;
    todo)
      [[ -n $note ]] || fail "$id is todo but says not what is missing"
      todo_ids+=("$id")
      ;;
    *) fail "$id has an unknown status '$status' (tested, n/a, todo)" ;;
  esac
  for ref in $refs; do
    file=${ref%%::*}
    name=${ref#*::}
    name=${name%%\[*}  # a pytest parameter id
    if [[ ! -f $root/$file ]]; then
      fail "$id: no file $file"
      continue
    fi
    carries "$file" "$name" "$id"
  done
done <"$table"

# highest PREFIX: the largest id of that kind with a row.
highest() {
  local prefix=$1 max=0 id n
  for id in "${!status_of[@]}"; do
    [[ $id == "$prefix"* ]] || continue
    n=$((10#${id#"$prefix"}))
    ((n > max)) && max=$n
  done
  echo "$max"
}

# totals PREFIX REQUIRED LABEL: "LABEL: covered/listed (tested a, explained b, todo c)"; an id up to REQUIRED
# without a row is an error, a later one is a gap.
totals() {
  local prefix=$1 required=$2 label=$3 tested=0 explained=0 todo=0 listed=0 i id last
  last=$(highest "$prefix")
  ((last > required)) || last=$required
  for ((i = 1; i <= last; i++)); do
    if [[ $prefix == F && $i -lt 100 ]]; then printf -v id 'F%02d' "$i"; else id=$prefix$i; fi
    case ${status_of[$id]:-} in
      tested) tested=$((tested + 1)) ;;
      n/a) explained=$((explained + 1)) ;;
      todo) todo=$((todo + 1)) ;;
      *)
        ((i > required)) || fail "$id has no row"
        continue
        ;;
    esac
    listed=$((listed + 1))
  done
  echo "$label: $((tested + explained))/$listed (tested $tested, explained $explained, todo $todo)"
}
totals F 134 F-cases
totals S 27 S-items

if ((${#todo_ids[@]})); then
  echo "todo: ${todo_ids[*]}"
  ((allow_todo)) || fail "${#todo_ids[@]} ids are todo (run with --allow-todo to accept them)"
fi
if ((errors)); then
  echo "fault-coverage: $errors problem(s)" >&2
  exit 1
fi
echo "fault-coverage: every listed test exists and carries its id"
