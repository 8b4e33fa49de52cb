#!/usr/bin/env python3
"""Rewrites citations of the old outside contract, `SPEC §6.4`, into citations of its pages in this
repository, `docs/retries.md §6.4`, using the section table of docs/README.md.

    scripts/cite-docs.py            rewrite every file under the cited trees in place
    scripts/cite-docs.py --dry-run  print what would change, change nothing
    scripts/cite-docs.py --check    exit 1 if any `SPEC §` citation is left (CI)
    scripts/cite-docs.py README.md  only these files or folders (relative to the repository)
    scripts/cite-docs.py --check-table  exit 1 unless every row of the table names a page whose heading
                                    carries that number (`## 6.4 Retry budget`), and every numbered
                                    heading of a page has its row

Forms handled, each section looked up on its own:
    SPEC §6.4                  -> docs/retries.md §6.4
    SPEC §5.4a                 -> docs/retries.md §5.4a
    SPEC §13.1, §13.3          -> docs/telemetry.md §13.1, §13.3              (one page: named once)
    SPEC §13, §15.2            -> docs/telemetry.md §13, docs/upstreams.md §15.2
    SPEC §5.3 and §19          -> docs/retries.md §5.3 and docs/libcurl-traps.md §19
    SPEC §5.3/§5.5             -> docs/retries.md §5.3/§5.5
    SPEC §6.2–6.4, §6.2-§6.4   -> docs/retries.md §6.2–6.4                    (a range on one page)
    SPEC §4–§11                -> docs/retries.md §4 to docs/bulkhead.md §11  (a range across pages)
    (SPEC §3), SPEC §3's       -> the same, punctuation kept
A section the table lacks falls back to its whole section's page (§3.9 -> settings.md); a number with no page
at all is an error naming the file and line. Without paths, the files under src tests python bindings cli
bench are read (build output, caches and binary files are skipped).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREES = ["include", "src", "tests", "python", "bindings", "cli", "bench"]
SKIP_DIRS = {".git", "build", "target", "__pycache__", ".pytest_cache", ".mypy_cache", "node_modules"}

# One section number: 6, 6.4, 5.4a.
NUM = r"[0-9]+(?:\.[0-9]+)?[a-z]?"
# A connector between two cited sections, and whether it makes a range.
SEP = r"(?:\s*[–-]\s*|\s*,\s*|\s+and\s+|\s+or\s+|\s*/\s*|\s*&\s*)"
# A citation: SPEC §N, then any number of further sections joined by a connector; after a range dash the
# § may be left out (§6.2–6.4). The lookahead keeps "§3." (a full stop) and "§3.2's" intact.
CITATION = re.compile(
    rf"SPEC\s+§(?P<first>{NUM})(?P<rest>(?:{SEP}§?{NUM}(?![0-9]))*)(?![0-9A-Za-z])"
)
PIECE = re.compile(rf"(?P<sep>{SEP})(?P<sect>§?)(?P<num>{NUM})")
TABLE_ROW = re.compile(r"^\|\s*§(?P<num>[0-9A-Za-z.]+)\s*\|[^|]*\|\s*\[(?P<page>[A-Za-z0-9_.-]+\.md)\]")


def load_table(readme: Path) -> dict[str, str]:
    table: dict[str, str] = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        m = TABLE_ROW.match(line)
        if m:
            table[m.group("num")] = m.group("page")
    if not table:
        sys.exit(f"cite-docs: no section table found in {readme}")
    return table


class Unknown(Exception):
    pass


def page_of(num: str, table: dict[str, str]) -> str:
    if num in table:
        return table[num]
    major = re.match(r"[0-9]+", num)
    if major and major.group(0) in table:
        return table[major.group(0)]
    raise Unknown(num)


def rewrite_citation(m: re.Match[str], table: dict[str, str]) -> str:
    items: list[tuple[str, str]] = [("", m.group("first"))]  # (connector before it, number)
    for p in PIECE.finditer(m.group("rest")):
        items.append((p.group("sep"), p.group("num")))
    out: list[str] = []
    previous_page = None
    for i, (sep, num) in enumerate(items):
        page = page_of(num, table)
        is_range = bool(re.fullmatch(r"\s*[–-]\s*", sep))
        if i == 0:
            out.append(f"docs/{page} §{num}")
        elif page == previous_page:
            out.append(f"{sep}{num}" if is_range else f"{sep}§{num}")
        elif is_range:
            out.append(f" to docs/{page} §{num}")
        else:
            out.append(f"{sep}docs/{page} §{num}")
        previous_page = page
    return "".join(out)


def files(root: Path, trees: list[str]):
    for tree in trees:
        base = root / tree
        if not base.exists():
            if tree in TREES:
                continue  # a default tree this checkout lacks
            sys.exit(f"cite-docs: {tree}: no such file or folder under {root}")
        for path in [base] if base.is_file() else sorted(base.rglob("*")):
            if not path.is_file() or any(part in SKIP_DIRS for part in path.relative_to(root).parts):
                continue
            try:
                text = path.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue  # binary or unreadable: cites nothing
            yield path, text


HEADING = re.compile(r"^## (?P<num>[0-9]+(?:\.[0-9]+)?[a-z]?|A) .*$", re.MULTILINE)
ANCHOR = re.compile(r"^\|\s*§(?P<num>[0-9A-Za-z.]+)\s*\|[^|]*\|\s*\[[^\]]+\]\([^)#]+#(?P<anchor>[^)]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as hyphens."""
    text = heading.lstrip("#").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def check_table(docs: Path) -> int:
    table = load_table(docs / "README.md")
    problems = []
    headings: dict[str, str] = {}
    slugs: dict[str, str] = {}
    for page in sorted(docs.glob("*.md")):
        for m in HEADING.finditer(page.read_text(encoding="utf-8")):
            if m.group("num") in headings:
                problems.append(f"§{m.group('num')}: a heading in {headings[m.group('num')]} and in {page.name}")
            headings[m.group("num")] = page.name
            slugs[m.group("num")] = slug(m.group(0))
    for line in (docs / "README.md").read_text(encoding="utf-8").splitlines():
        m = ANCHOR.match(line)
        if m and m.group("num") in slugs and slugs[m.group("num")] != m.group("anchor"):
            problems.append(f"§{m.group('num')}: the table links #{m.group('anchor')}, the heading is "
                            f"#{slugs[m.group('num')]}")
    for num, page in sorted(table.items()):
        if not (docs / page).is_file():
            problems.append(f"§{num}: the table names {page}, which does not exist")
        elif headings.get(num) != page:
            problems.append(f"§{num}: no heading '## {num} ...' in {page}")
    for num, page in sorted(headings.items()):
        if num not in table:
            problems.append(f"§{num}: a heading in {page} without a row in the table")
    for p in problems:
        print(f"cite-docs: {p}", file=sys.stderr)
    if not problems:
        print(f"cite-docs: {len(table)} sections, each a heading of its page")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository to work on (default: this one)")
    parser.add_argument("paths", nargs="*", default=TREES, help="files or folders to work on (default: %(default)s)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if any 'SPEC §' citation is left")
    mode.add_argument("--dry-run", action="store_true", help="print the rewrites, change nothing")
    mode.add_argument("--check-table", action="store_true",
                      help="check docs/README.md's table against the pages' numbered headings")
    args = parser.parse_args()
    root: Path = args.root.resolve()

    if args.check_table:
        return check_table(root / "docs")

    if args.check:
        left = 0
        for path, text in files(root, args.paths):
            for lineno, line in enumerate(text.splitlines(), 1):
                if "SPEC §" in line:
                    left += 1
                    print(f"{path.relative_to(root)}:{lineno}: {line.strip()}")
        if left:
            print(f"cite-docs: {left} line(s) still cite 'SPEC §' (run scripts/cite-docs.py)", file=sys.stderr)
            return 1
        print("cite-docs: no 'SPEC §' citation left")
        return 0

    table = load_table(root / "docs" / "README.md")
    changed_files = 0
    rewritten = 0
    errors = 0
    for path, text in files(root, args.paths):
        count = 0
        new_lines = []
        for lineno, line in enumerate(text.splitlines(keepends=True), 1):
            def sub(m: re.Match[str]) -> str:
                nonlocal count, errors
                try:
                    new = rewrite_citation(m, table)
                except Unknown as e:
                    errors += 1
                    print(f"{path.relative_to(root)}:{lineno}: no page for §{e} in docs/README.md", file=sys.stderr)
                    return m.group(0)
                count += 1
                if args.dry_run:
                    print(f"{path.relative_to(root)}:{lineno}: {m.group(0)!r} -> {new!r}")
                return new

            new_lines.append(CITATION.sub(sub, line))
        if count:
            changed_files += 1
            rewritten += count
            if not args.dry_run:
                path.write_text("".join(new_lines), encoding="utf-8")
    verb = "would rewrite" if args.dry_run else "rewrote"
    print(f"cite-docs: {verb} {rewritten} citation(s) in {changed_files} file(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
