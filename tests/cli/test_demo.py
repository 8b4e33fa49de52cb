"""humus-http demo: the run shows the breaker opening during the outage and closing after recovery, and
retries throttled by the budget; --plot writes an SVG that a browser (headless Chromium) loads with every
series in it."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

DURATION_S = 8
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class DemoRun(NamedTuple):
    returncode: int
    stdout: str
    stderr: str
    svg: Path


@pytest.fixture(scope="module")
def demo(cli: Path, tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    svg = tmp_path_factory.mktemp("demo") / "timeline.svg"
    result = subprocess.run([str(cli), "demo", "--duration", str(DURATION_S), "--plot", str(svg)],
                            capture_output=True, text=True, timeout=DURATION_S + 30, check=False)
    return DemoRun(result.returncode, result.stdout, result.stderr, svg)


UNFINISHED = re.compile(r"^  (\d+) calls were still in flight at the end", re.MULTILINE)


def scheduled_calls_accounted(stdout: str, lines: list[tuple[str, ...]], rate: int, seconds: int) -> None:
    """Every call the rate schedules is made (the pacer makes them all, late ones at once on a loaded machine)
    and counted in a second's line, or reported still in flight at the end: counts, not how many calls a
    second of wall-clock time held, which a loaded machine shifts from one second to the next."""
    counted = sum(int(line[3]) for line in lines)
    unfinished = sum(int(n) for n in UNFINISHED.findall(stdout))
    assert counted <= rate * seconds <= counted + unfinished, (counted, unfinished)


TIMELINE_LINE = re.compile(r"^\s+(\d+)-(\d+)s\s+(healthy|slow|failing|recovering)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)"
                           r"\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+(\S+)$", re.MULTILINE)


def test_the_demo_runs_and_prints_one_line_per_second(demo: DemoRun) -> None:
    assert demo.returncode == 0, demo.stderr
    assert demo.stderr == ""
    lines = TIMELINE_LINE.findall(demo.stdout)
    assert [int(line[0]) for line in lines] == list(range(DURATION_S))
    assert [line[2] for line in lines] == ["healthy", "healthy", "slow", "failing", "failing", "failing",
                                           "recovering", "recovering"]
    scheduled_calls_accounted(demo.stdout, lines, 200, DURATION_S)  # the steady default rate, 200 calls/s
    for line in lines:
        calls, ok, attempts, retries, throttled, rejected, failed, full = map(int, line[3:11])
        assert ok + rejected + failed + full == calls
        assert re.fullmatch(r"(closed|open|half-open)(->(closed|open|half-open))*", line[12])


def test_the_breaker_opens_during_the_outage_and_closes_after_recovery(demo: DemoRun) -> None:
    assert re.search(r"breaker opened during the outage: yes, at [\d.]+s \(failing: 3-6s\)", demo.stdout)
    assert re.search(r"breaker closed after recovery: yes, at [\d.]+s \(recovering from 6s\), and stayed closed",
                     demo.stdout)
    lines = TIMELINE_LINE.findall(demo.stdout)
    assert any("open" in line[12].split("->") for line in lines if line[2] == "failing")
    assert lines[-1][12] == "closed"
    assert re.search(r"Breaker \(from the client's log records\): opened [1-9]\d* times?, closed [1-9]", demo.stdout)
    assert any(int(line[8]) > 0 for line in lines if line[2] == "failing")  # rejected while open


def test_retries_are_throttled_by_the_budget(demo: DemoRun) -> None:
    assert re.search(r"retries throttled by the budget: yes, \d+ retries refused", demo.stdout)
    lines = TIMELINE_LINE.findall(demo.stdout)
    throttled = sum(int(line[7]) for line in lines)
    assert throttled > 0
    assert throttled <= sum(int(line[9]) for line in lines)  # each refused retry ends its call as failed
    assert min(float(line[11]) for line in lines) <= 5.0  # the budget fell to where retries stop


def test_the_summary_has_a_row_per_phase(demo: DemoRun) -> None:
    summary = demo.stdout.split("\nSummary\n", 1)[1]
    for phase in ("healthy", "slow", "failing", "recovering", "all"):
        assert re.search(rf"^  {phase}\s+\d+\s+\d+", summary, re.MULTILINE), phase
    assert "the upstream got" in summary


def test_the_svg_renders_in_a_browser_with_every_series(demo: DemoRun) -> None:
    assert demo.svg.exists()
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium); the SVG was written but "
                    "not loaded in a browser")
    result = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                             demo.svg.resolve().as_uri()], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert "parsererror" not in dom and "<svg" in dom
    for series in ("series-calls", "series-attempts", "series-ok", "series-failed", "series-rejected",
                   "series-throttled"):
        match = re.search(rf'<polyline id="{series}"[^>]* points="([^"]*)"', dom)
        assert match, f"{series} missing from the rendered DOM"
        assert len(match.group(1).split()) == DURATION_S
    breaker = re.search(r'<g id="series-breaker">(.*?)</g>', dom, re.DOTALL)
    assert breaker, "breaker band missing"
    assert 'class="breaker-open"' in breaker.group(1) and 'class="breaker-closed"' in breaker.group(1)
    # A half-open stretch lasts as long as its probes: drawn wide enough to see however short it was.
    for width in re.findall(r'class="breaker-half-open"[^>]* width="([0-9.]+)"', breaker.group(1)):
        assert float(width) >= 4, f"a half-open stretch {width} px wide"


def test_plot_to_an_unwritable_path_exits_23(cli: Path, tmp_path: Path) -> None:
    target = tmp_path / "missing-dir" / "x.svg"
    result = subprocess.run([str(cli), "demo", "--duration", "5", "--rate", "20", "--plot", str(target)],
                            capture_output=True, text=True, timeout=40, check=False)
    assert result.returncode == 23
    assert result.stderr.strip() == f"humus-http demo: --plot: cannot write {target}: No such file or directory"


def test_plot_without_a_file_writes_to_tmpdir_not_the_working_directory(cli: Path, tmp_path: Path) -> None:
    tmpdir, workdir = tmp_path / "tmp", tmp_path / "checkout"
    tmpdir.mkdir()
    workdir.mkdir()
    # --plot alone, then another flag: the flag is not taken for the file name.
    result = subprocess.run([str(cli), "demo", "--duration", "5", "--plot", "--rate", "20"], capture_output=True,
                            text=True, timeout=40, check=False, cwd=workdir, env={**os.environ, "TMPDIR": str(tmpdir)})
    assert result.returncode == 0, result.stderr
    chart = tmpdir / "humus-http-demo.svg"
    assert f"Chart: {chart} (open it in a browser)" in result.stdout
    assert "<svg" in chart.read_text()
    assert list(workdir.iterdir()) == []


def test_rate_sets_the_calls_per_second(cli: Path) -> None:
    result = subprocess.run([str(cli), "demo", "--duration", "5", "--rate", "50"], capture_output=True, text=True,
                            timeout=40, check=False)
    assert result.returncode == 0, result.stderr
    lines = TIMELINE_LINE.findall(result.stdout)
    assert len(lines) == 5
    scheduled_calls_accounted(result.stdout, lines, 50, 5)  # 50 calls a second, not the default 200


def test_slow_call_trip_opens_the_breaker_in_the_slow_phase(cli: Path) -> None:
    """With --slow-call-trip every 4th answer of the slow phase (held 600 ms, past the 250 ms attempt timeout, so
    over the 100 ms slow-call duration whatever the machine's load) makes a quarter of the window slow, past the
    20% that opens the breaker (its quarter of failures alone stays below the failure rate, half)."""
    result = subprocess.run([str(cli), "demo", "--duration", "5", "--rate", "50", "--slow-call-trip"],
                            capture_output=True, text=True, timeout=40, check=False)
    assert result.returncode == 0, result.stderr
    assert "slow-call trip: an attempt over 100ms is slow" in result.stdout
    slow = [line for line in TIMELINE_LINE.findall(result.stdout) if line[2] == "slow"]
    assert slow and "open" in "".join(line[12] for line in slow), result.stdout
