"""The installed package: py.typed and the stubs ship, mypy --strict accepts the examples (and refuses a
wrong call), and the README's quickstart runs."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import humus_http
import pytest
from server_harness import TestServer

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def mypy(tmp_path: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir",
                           str(tmp_path / "mypy-cache"), *map(str, files)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)


def test_the_installed_package_carries_py_typed_and_stubs() -> None:
    package = Path(humus_http.__file__).parent
    assert (package / "py.typed").is_file()
    assert (package / "_native.pyi").is_file()
    assert humus_http.core_version == humus_http.__version__


def test_examples_pass_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    done = mypy(tmp_path, EXAMPLES / "quickstart.py", EXAMPLES / "typed_usage.py", EXAMPLES / "observability.py")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_catches_a_wrong_call(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    bad = tmp_path / "bad.py"
    bad.write_text("import humus_http\n"
                   "client = humus_http.Client('https://x', max_attempts='3')\n"
                   "status: str = client.get('/').status_code\n")
    done = mypy(tmp_path, bad)
    assert done.returncode != 0
    assert '"max_attempts"' in done.stdout, done.stdout
    assert 'expression has type "int", variable has type "str"' in done.stdout, done.stdout


def test_the_quickstart_runs(server: TestServer, tmp_path: Path) -> None:
    source = (EXAMPLES / "quickstart.py").read_text()
    assert len(source.strip().splitlines()) <= 10
    script = tmp_path / "quickstart.py"
    script.write_text(source.replace("https://example.com", server.url("http")))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("200 HTTP/1.1 ")


def test_a_blocking_program_does_not_import_asyncio() -> None:
    # AsyncClient is imported on first use: asyncio (with ssl, socket, logging, concurrent.futures) is about a
    # third of the package's import time, which a program that never runs a loop should not pay. Likewise the
    # otel and prometheus bridges, and mimetypes (file uploads only).
    probe = ("import sys, humus_http\n"
             "assert 'asyncio' not in sys.modules, 'import humus_http imported asyncio'\n"
             "with humus_http.Client('http://127.0.0.1:9') as client:\n"
             "    pass\n"
             "assert 'asyncio' not in sys.modules, 'a blocking Client imported asyncio'\n"
             "assert humus_http.AsyncClient.__name__ == 'AsyncClient' and 'AsyncClient' in dir(humus_http)\n"
             "assert 'asyncio' in sys.modules\n"
             "assert 'humus_http.otel' not in sys.modules and 'mimetypes' not in sys.modules\n"
             "assert humus_http.otel.__name__ == 'humus_http.otel' and 'prometheus' in dir(humus_http)\n"
             "from humus_http import *  # every name of __all__, the lazy ones too\n"
             "assert prometheus.__name__ == 'humus_http.prometheus'\n"
             "print(AsyncBodyOptions.__name__)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "AsyncBodyOptions\n"
