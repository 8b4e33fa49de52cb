#!/usr/bin/env python3
"""Runs one command against a fresh humus_test_server and returns its exit status.

    run_with_server.py --certs DIR [--timeout S] -- COMMAND [ARG]...

Starts tests/server/humus_test_server.py (certificates in DIR, shared with the C++ harness), waits for its
ready line, runs COMMAND with these placeholders replaced in every argument, then stops the server by
closing its stdin (killing it after 2 s):

    {http}        http://127.0.0.1:PORT        (the plain listener)
    {https}       https://payments:PORT        (reach it with a resolve entry and the test CA)
    {http_port}   {https_port}                 the ports alone
    {ca}          DIR/ca.pem                   the test CA
    {certs}       DIR

COMMAND inherits stdout and stderr. Exit status: COMMAND's, or 124 on timeout, 125 if the server did not
start (is `pip install -r tests/server/requirements.txt` done?), 128+N when killed by signal N.

`--script PATH=STEPS` (repeatable) scripts PATH through the server's control API before COMMAND runs
(STEPS: the JSON array of POST /_control/script, e.g. '[{"status": 409}, {"status": 200}]').

With `--expect REGEX` (repeatable) COMMAND's stdout is captured, printed, and must match every REGEX
(re.MULTILINE): a COMMAND that exits 0 without printing what it should exits 1 instead. So an example program
is checked by what it prints, not only by its exit status.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import select
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "server" / "humus_test_server.py"
READY_TIMEOUT_S = 10.0
STOP_GRACE_S = 2.0


def read_ready_line(stream: int, timeout_s: float) -> str:
    """Reads the server's one ready line, byte by byte so select() sees what is still unread."""
    deadline = time.monotonic() + timeout_s
    line = b""
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([stream], [], [], remaining)[0]:
            return ""
        byte = os.read(stream, 1)
        if not byte:
            return ""
        line += byte
    return line.decode()


def stop(server: subprocess.Popen[bytes]) -> None:
    assert server.stdin is not None and server.stdout is not None
    server.stdin.close()  # EOF on stdin is the server's signal to exit
    try:
        server.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()
    server.stdout.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--certs", required=True, help="certificate directory (created if absent)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds COMMAND may run")
    parser.add_argument("--expect", action="append", default=[], metavar="REGEX",
                        help="COMMAND's stdout must match REGEX (repeatable)")
    parser.add_argument("--script", action="append", default=[], metavar="PATH=STEPS",
                        help="script PATH with the JSON array STEPS before COMMAND runs (repeatable)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARG]...")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no COMMAND given")

    certs = Path(args.certs).resolve()
    certs.mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen([sys.executable, str(SERVER), "--certs", str(certs)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None
        line = read_ready_line(server.stdout.fileno(), READY_TIMEOUT_S)
        if not line:
            print("run_with_server: humus_test_server did not become ready", file=sys.stderr)
            return 125
        ready = json.loads(line)
        values = {
            "{http}": f"http://127.0.0.1:{ready['http']}",
            "{https}": f"https://payments:{ready['https']}",
            "{http_port}": str(ready["http"]),
            "{https_port}": str(ready["https"]),
            "{ca}": str(Path(ready["certs"]) / "ca.pem"),
            "{certs}": str(ready["certs"]),
        }
        for entry in args.script:
            path, _, steps = entry.partition("=")
            body = json.dumps({"path": path, "steps": json.loads(steps)}).encode()
            request = urllib.request.Request(f"{values['{http}']}/_control/script", data=body, method="POST")
            with urllib.request.urlopen(request, timeout=10) as answer:
                answer.read()
        argv = []
        for arg in command:
            for key, value in values.items():
                arg = arg.replace(key, value)
            argv.append(arg)
        sys.stdout.flush()
        try:
            done = subprocess.run(argv, check=False, timeout=args.timeout,
                                  stdout=subprocess.PIPE if args.expect else None)
            status = done.returncode
        except subprocess.TimeoutExpired:
            print(f"run_with_server: {argv[0]} still running after {args.timeout:g} s", file=sys.stderr)
            return 124
        if status < 0:  # killed by a signal: report it the way a shell would
            print(f"run_with_server: {argv[0]} killed by signal {-status}", file=sys.stderr)
            return 128 - status
        if args.expect:
            output = done.stdout.decode(errors="replace")
            sys.stdout.write(output)
            missing = [regex for regex in args.expect if not re.search(regex, output, re.MULTILINE)]
            if status == 0 and missing:
                print(f"run_with_server: {argv[0]} printed nothing matching {missing}", file=sys.stderr)
                return 1
        return status
    finally:
        stop(server)


if __name__ == "__main__":
    sys.exit(main())
