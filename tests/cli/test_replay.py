"""humus-http replay (docs/replay.md §21): recorded traffic through a client on a virtual clock. The example
traffic's report is pinned for seed 1 (the numbers change only when the client's behaviour or the example
does: then read the new report, check it against docs/replay.md §21.6 and update both); --compare puts two
settings side by side; a small hand-made recording checks the rules of §21.2 one by one."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "docs" / "replay"


def rows(report: str) -> dict[str, list[str]]:
    """The report's table (from the column heads to the first blank line): label -> each column's cell."""
    lines = report.splitlines()
    table: dict[str, list[str]] = {}
    for line in lines[3:lines.index("", 3) if "" in lines[3:] else len(lines)]:
        label, cells = line[:28].strip(), line[28:].split()
        table[label] = [" ".join(cells[i:i + 2]) if i + 1 < len(cells) and cells[i + 1] in ("ms", "s") else c
                        for i, c in enumerate(cells) if c not in ("ms", "s")]
    return table


def transitions(report: str) -> list[str]:
    """The breaker changes of the first column: "41.517 s closed -> open"."""
    _, _, tail = report.partition("breaker transitions (time from the replay's start)\n")
    found = []
    for line in tail.splitlines():
        m = re.match(r"^\s+(\d+\.\d{3} s)\s+(\S+ -> \S+)", line)
        if m:
            found.append(f"{m.group(1)} {m.group(2)}")
    return found


def test_example_report_is_pinned_for_a_seed(run) -> None:
    result = run("replay", "--seed", "1", "--settings", EXAMPLE / "default.json", EXAMPLE / "outage.jsonl")
    assert result.returncode == 0, result.stderr
    report = result.stdout.decode()
    assert report.startswith("replay of ") and "564 recorded requests, 564 calls, over 119.892 s; seed 1" in report
    t = rows(report)
    pinned = {
        "calls": "564", "answered 2xx": "328", "answered otherwise": "9", "failed, no answer": "1",
        "rejected by the breaker": "226", "bulkhead full": "0", "attempts": "338", "wire requests": "338",
        "retries": "4", "throttled": "6", "rejected attempts": "230", "most calls in flight": "5",
        "load amplification": "0.60x", "call latency p50": "39 ms", "call latency p99": "378 ms",
        "breaker transitions": "9", "last call ended at": "120.038 s",
    }
    assert {k: t[k][0] for k in pinned} == pinned
    assert transitions(report) == [
        "41.517 s closed -> open", "51.517 s open -> half-open", "51.532 s half-open -> open",
        "61.532 s open -> half-open", "66.732 s half-open -> open", "76.732 s open -> half-open",
        "77.348 s half-open -> open", "87.348 s open -> half-open", "88.652 s half-open -> closed",
    ]
    # The same seed, the same report.
    again = run("replay", "--seed", "1", "--settings", EXAMPLE / "default.json", EXAMPLE / "outage.jsonl")
    assert again.stdout.decode() == report


def test_compare_shows_two_settings_side_by_side(run) -> None:
    result = run("replay", "--settings", EXAMPLE / "default.json", "--compare", EXAMPLE / "tuned.json",
                 EXAMPLE / "outage.jsonl")
    assert result.returncode == 0, result.stderr
    report = result.stdout.decode()
    head = report.splitlines()[2].split()
    assert head == ["default.json", "tuned.json"]
    t = rows(report)
    assert all(len(cells) == 2 for cells in t.values()), t
    assert t["calls"] == ["564", "564"]
    assert t["answered 2xx"] == ["328", "357"]
    assert t["breaker transitions"] == ["9", "15"]
    assert t["call latency p99"] == ["378 ms", "1000 ms"]
    # The left column is the single run's, unchanged by the company.
    single = run("replay", "--settings", EXAMPLE / "default.json", EXAMPLE / "outage.jsonl")
    assert {k: v[0] for k, v in t.items()} == {k: v[0] for k, v in rows(single.stdout.decode()).items()}
    assert "  default.json" in report and "  tuned.json" in report.split("breaker transitions (")[1]


def write_lines(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_an_attempt_gets_the_recorded_request_in_effect_at_its_time(run, tmp_path: Path) -> None:
    # 0 s: 503 asking for 1 s. 0.5 s: 200. The first call's retry at 1.01 s meets the 0.5 s line, so it succeeds;
    # the resend line tells the dependency's state (a 500 at 2 s) but starts no call; the call at 3 s meets it.
    traffic = write_lines(tmp_path / "t.jsonl", [
        {"time": 0, "status": 503, "retry_after": 1, "latency": 0.01},
        {"time": 0.5, "status": 200, "latency": 0.02},
        {"time": 2, "status": 500, "resend": 1},
        {"time": 3, "method": "POST", "status": 500},
    ])
    settings = tmp_path / "s.json"
    settings.write_text('{"base_url": "https://payments.example:8443"}')
    result = run("replay", "--settings", settings, traffic)
    assert result.returncode == 0, result.stderr
    t = rows(result.stdout.decode())
    assert "4 recorded requests, 3 calls" in result.stdout.decode()
    assert {k: t[k][0] for k in ("calls", "answered 2xx", "answered otherwise", "attempts", "wire requests",
                                  "retries", "load amplification", "breaker transitions")} == {
        "calls": "3", "answered 2xx": "2", "answered otherwise": "1", "attempts": "4", "wire requests": "4",
        "retries": "1", "load amplification": "1.33x", "breaker transitions": "0"}
    # The retried call: the first answer's 10 ms, 1 s of Retry-After, the second answer's 20 ms.
    assert t["call latency p99"] == ["1030 ms"]


def test_a_timeout_line_hangs_until_the_replayed_attempt_timeout(run, tmp_path: Path) -> None:
    traffic = write_lines(tmp_path / "t.jsonl", [{"time": 0, "error": "timeout", "latency": 30}])
    settings = tmp_path / "s.json"
    settings.write_text('{"attempt_timeout": "250ms", "max_attempts": 1}')
    result = run("replay", "--settings", settings, traffic)
    assert result.returncode == 0, result.stderr
    t = rows(result.stdout.decode())
    assert t["failed, no answer"] == ["1"] and t["call latency p50"] == ["250 ms"]


@pytest.mark.parametrize("line, message", [
    ("not json", "line 1: not valid JSON"),
    ('{"status": 200}', 'line 1: "time" is missing'),
    ('{"time": 0}', 'line 1: exactly one of "status" and "error" is needed'),
    ('{"time": 0, "error": "gone"}', 'line 1: "error": unknown kind "gone" (known: timeout, rejected, connect'),
    ('{"time": 0, "status": 200, "latncy": 1}', 'line 1: unknown key "latncy"'),
    ('{"time": 0, "error": "rejected"}', "no line records an answer"),
])
def test_a_bad_traffic_line_is_named(run, tmp_path: Path, line: str, message: str) -> None:
    traffic = tmp_path / "t.jsonl"
    traffic.write_text(line + "\n")
    result = run("replay", "--settings", EXAMPLE / "default.json", traffic)
    assert result.returncode == 2
    assert message in result.stderr


def test_usage_and_settings_errors(run, tmp_path: Path) -> None:
    traffic = EXAMPLE / "outage.jsonl"
    missing = run("replay", traffic)
    assert missing.returncode == 2 and "--settings FILE is required" in missing.stderr
    unknown = run("replay", "--settings", EXAMPLE / "default.json", "--speed", "2", traffic)
    assert unknown.returncode == 2 and "unknown option --speed" in unknown.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('{"max_attempts": 0}')
    config = run("replay", "--settings", bad, traffic)
    assert config.returncode == 78 and "max_attempts" in config.stderr
    unreadable = run("replay", "--settings", EXAMPLE / "default.json", tmp_path / "none.jsonl")
    assert unreadable.returncode == 26
    assert run("replay", "--help").stdout.startswith(b"usage: humus-http replay")
