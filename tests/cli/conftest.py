"""Fixtures for the humus-http CLI tests: the binary (HUMUS_CLI, default build/dev/cli/humus-http), the
project's test server (tests/server/), and a runner that captures what the CLI prints and returns."""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "server"))

from server_harness import TestServer  # noqa: E402


def cli_path() -> Path:
    path = Path(os.environ.get("HUMUS_CLI", ROOT / "build" / "dev" / "cli" / "humus-http"))
    return path if path.is_absolute() else ROOT / path


# The sanitizers the binary was built with (ctest passes the build's HUMUS_SANITIZE), empty for a plain build.
SANITIZERS = os.environ.get("HUMUS_CLI_SANITIZE", "")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "large: moves a gigabyte on loopback (a few seconds); -m 'not large' skips it")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Under ThreadSanitizer a gigabyte through the CLI takes minutes; the C++ stream tests skip it there too.
    if "thread" in SANITIZERS:
        skip = pytest.mark.skip(reason="a gigabyte under ThreadSanitizer takes minutes; run in the other builds")
        for item in items:
            if "large" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def cli() -> Path:
    path = cli_path()
    if not path.exists():
        pytest.fail(f"humus-http not found at {path}: build it, or set HUMUS_CLI")
    return path


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestServer]:
    with TestServer(tmp_path_factory.mktemp("certs")) as started:
        yield started


@pytest.fixture
def run(cli: Path):
    """run(*args, stdin=b"", timeout=60) -> CompletedProcess with bytes stdout and str stderr."""

    def runner(*args: str, stdin: bytes = b"", timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
        result = subprocess.run([str(cli), *map(str, args)], input=stdin, capture_output=True, timeout=timeout,
                                check=False)
        result.stderr = result.stderr.decode(errors="replace")  # type: ignore[assignment]
        return result

    return runner
