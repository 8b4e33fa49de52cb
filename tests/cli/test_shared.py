"""humus-http shared ls|show|reset (docs/shared.md §22.5): the share.name segments of the host, made here by a
CLI call whose --settings name one, read and removed through the C ABI's humus_shared_* functions."""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from server_harness import TestServer

SHM = Path("/dev/shm")


@pytest.fixture
def segment() -> Iterator[str]:
    """A segment name of this test alone, removed afterwards whatever the test did."""
    name = f"clitest-{os.getpid()}-{os.urandom(4).hex()}"
    yield name
    (SHM / f"humus_http.{name}").unlink(missing_ok=True)


def make_segment(run, server: TestServer, tmp_path: Path, name: str) -> str:
    """One call to /NAME that fails with 503 through a client sharing `name`: one of the two failures that open
    the shared breaker."""
    settings = tmp_path / "shared.json"
    settings.write_text(json.dumps({"share": {"name": name}, "trip": {"consecutive_failures": 2},
                                    "max_attempts": 1}))
    server.script(f"/{name}", [{"status": 503}])
    result = run("get", server.url("http", f"/{name}"), "--settings", str(settings), "-s")
    assert result.returncode == 0, result.stderr  # a 503 without --fail is an answer
    assert (SHM / f"humus_http.{name}").exists()
    return server.url("http", "/").rstrip("/")


def test_ls_lists_the_segment_with_its_origin(run, server: TestServer, tmp_path: Path, segment: str) -> None:
    origin = make_segment(run, server, tmp_path, segment)
    result = run("shared", "ls")
    assert result.returncode == 0, result.stderr
    line = next(l for l in result.stdout.decode().splitlines() if l.startswith(segment + " "))
    size = (SHM / f"humus_http.{segment}").stat().st_size
    assert re.match(rf"{re.escape(segment)}\s+{size}\s+0\s+{re.escape(origin)}$", line), line

    listed = json.loads(run("shared", "ls", "--json").stdout)
    entry = next(s for s in listed["segments"] if s["name"] == segment)
    assert entry == {"name": segment, "size": size, "origins": [origin], "live_processes": 0}


def test_show_prints_the_origins_breaker_and_counts(run, server: TestServer, tmp_path: Path,
                                                     segment: str) -> None:
    origin = make_segment(run, server, tmp_path, segment)
    result = run("shared", "show", segment)
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    assert origin in text
    assert re.search(r"breaker\s+closed \(generation \d+\)", text), text
    assert "failures 1," in text and "consecutive failures 1," in text
    assert re.search(r"bulkhead\s+0 in flight of 50", text), text

    report = json.loads(run("shared", "show", segment, "--json").stdout)
    assert report["name"] == segment and report["live_processes"] == 0
    [o] = report["origins"]
    assert o["origin"] == origin and o["state"] == "closed"
    assert o["counts"]["failures"] == 1 and o["counts"]["successes"] == 0
    assert o["bulkhead"] == {"in_flight": 0, "max_concurrent": 50}
    assert o["budget"]["policy"] == "token_bucket" and 0 < o["budget"]["tokens"] <= 10

    # A second process's failure is the second in a row: the shared breaker opens, and a third process is
    # turned away by it without a request.
    settings = str(tmp_path / "shared.json")
    assert run("get", server.url("http", f"/{segment}"), "--settings", settings, "-s").returncode == 0
    opened = json.loads(run("shared", "show", segment, "--json").stdout)["origins"][0]
    assert opened["state"] == "open" and opened["generation"] > o["generation"]
    assert re.search(r"breaker\s+open \(generation \d+\)", run("shared", "show", segment).stdout.decode())
    third = run("get", server.url("http", f"/{segment}"), "--settings", settings, "-s")
    assert third.returncode == 120
    assert len(server.requests(f"/{segment}")) == 2


def test_reset_removes_the_segment(run, server: TestServer, tmp_path: Path, segment: str) -> None:
    make_segment(run, server, tmp_path, segment)
    result = run("shared", "reset", segment)
    assert result.returncode == 0, result.stderr
    assert not (SHM / f"humus_http.{segment}").exists()
    assert segment not in run("shared", "ls").stdout.decode()
    # The next client makes a new segment: the breaker is closed again and the call goes out.
    server.script(f"/{segment}", [{"status": 200, "body": "ok"}])
    again = run("get", server.url("http", f"/{segment}"), "--settings", str(tmp_path / "shared.json"))
    assert again.returncode == 0 and again.stdout == b"ok"
    assert json.loads(run("shared", "show", segment, "--json").stdout)["origins"][0]["state"] == "closed"


@pytest.mark.parametrize("command", ["show", "reset"])
def test_an_unknown_name_fails_clearly(run, segment: str, command: str) -> None:
    result = run("shared", command, segment)
    assert result.returncode == 1
    assert result.stdout == b""
    assert f'no segment "{segment}" on this host' in result.stderr


@pytest.mark.parametrize("command", ["show", "reset"])
def test_a_bad_name_is_refused_with_the_rule(run, command: str) -> None:
    result = run("shared", command, "../etc")
    assert result.returncode == 1
    assert "share.name" in result.stderr and "1 to 64 letters, digits" in result.stderr


@pytest.mark.parametrize("args", [[], ["show"], ["reset", "a", "b"], ["frob"], ["ls", "--bogus"]])
def test_a_malformed_command_prints_the_usage(run, args: list[str]) -> None:
    result = run("shared", *args)
    assert result.returncode == 2
    assert "usage: humus-http shared ls" in result.stderr
