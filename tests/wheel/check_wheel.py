"""The repaired wheel (scripts/wheel.sh) installs and works where nothing could build it.

    python3 tests/wheel/check_wheel.py OUTDIR

Installs the one humus_http wheel of OUTDIR with pip into a fresh virtual environment (no system site
packages), pip running with PATH reduced to the environment's bin/ (python3, pip, the activate scripts), CC,
CXX and every other variable unset, binaries only from OUTDIR (`--only-binary=:all: --no-index --find-links
OUTDIR`); checks that no compiler is on that PATH, that pip built nothing and installed the manylinux wheel,
and prints how long pip took. Then, in that environment with the same PATH, calls the test server's HTTP/2 TLS
listener (tests/server/, its own test CA) and checks that the libcurl, OpenSSL and nghttp2 in the process's
memory are the copies in the installed humus_http.libs/ (the system's OpenSSL only beside them, for Python's
own ssl module), and with ldd that every library of the wheel resolves them there. Runs the test server with
the interpreter running this script (it needs tests/server/requirements.txt). Exits non-zero with a sentence
on failure.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "server"))

from server_harness import SERVER_NAME, TestServer  # noqa: E402

COMPILERS = ("gcc", "cc", "c++", "g++", "clang", "clang++", "cmake", "ld")
VENDORED = ("libcurl", "libssl", "libcrypto", "libnghttp2")

# Runs inside the fresh environment: one HTTPS call, then what the process mapped.
CHILD = r"""
import json, sys
import humus_http

base, ca_file, resolve_from, resolve_to = sys.argv[1:]
runtime = humus_http.Runtime(resolve={resolve_from: resolve_to})
with humus_http.Client(base, tls=humus_http.TLS(ca_file=ca_file), runtime=runtime, max_attempts=1) as client:
    response = client.get("/wheel")
with open("/proc/self/maps") as maps:
    mapped = sorted({line.split(None, 5)[5].strip() for line in maps if len(line.split(None, 5)) == 6})
print(json.dumps({"prefix": sys.prefix, "python_ssl": "_ssl" in sys.modules, "status": response.status_code, "http_version": response.http_version,
                  "package": humus_http.__file__, "native": humus_http._native.__file__,
                  "mapped": [path for path in mapped if ".so" in path]}))
"""


def step(message: str) -> None:
    print(f"== {message}", flush=True)


def fail(message: str) -> None:
    print(f"check_wheel: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def main() -> None:
    if len(sys.argv) != 2:
        print(f"usage: {sys.argv[0]} OUTDIR", file=sys.stderr)
        sys.exit(2)
    outdir = Path(sys.argv[1]).resolve()
    wheels = sorted(outdir.glob("*.whl"))
    if len(wheels) != 1:
        fail(f"expected one .whl in {outdir} (scripts/wheel.sh {outdir}), found {len(wheels)}")
    wheel = wheels[0]
    if "manylinux" not in wheel.name:
        fail(f"{wheel.name} has no manylinux tag: was it repaired (scripts/wheel.sh)?")

    with tempfile.TemporaryDirectory(prefix="humus-wheel-check-") as tmp:
        work = Path(tmp)
        venv = work / "venv"
        step(f"python -m venv {venv.name} (no system site packages)")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        if "include-system-site-packages = false" not in (venv / "pyvenv.cfg").read_text():
            fail("the virtual environment sees the system's site packages")
        python = venv / "bin" / "python3"

        # The only directory on PATH: the environment's own bin/ (python3, pip and the activate scripts), nothing
        # that could compile. (A directory of symlinks to its python3 would not do: Python finds its venv by the
        # pyvenv.cfg beside the path it was started by, and would run as the base interpreter.)
        bin_dir = venv / "bin"
        env = {"PATH": str(bin_dir), "HOME": str(work), "LANG": "C.UTF-8", "PIP_NO_CACHE_DIR": "1",
               "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_CONFIG_FILE": os.devnull}
        found = {name: shutil.which(name, path=env["PATH"]) for name in COMPILERS}
        if any(found.values()):
            fail(f"a build tool is on the reduced PATH: {found}")
        if "CC" in env or "CXX" in env:
            fail("CC or CXX is set for pip")
        print(f"PATH={env['PATH']} holds {sorted(p.name for p in bin_dir.iterdir())}; "
              f"none of {' '.join(COMPILERS)} found; CC and CXX unset")

        step(f"pip install --only-binary=:all: --no-index --find-links OUTDIR humus_http ({wheel.name})")
        start = time.monotonic()
        done = subprocess.run([str(python), "-m", "pip", "install", "--only-binary=:all:", "--no-index",
                               "--find-links", str(outdir), "humus_http"],
                              env=env, cwd=work, capture_output=True, text=True, check=False)
        install_s = time.monotonic() - start
        if done.returncode != 0:
            fail(f"pip install failed:\n{done.stdout}{done.stderr}")
        if "Building wheel" in done.stdout or "setup.py" in done.stdout:
            fail(f"pip built from source:\n{done.stdout}")
        print(f"pip install: {install_s:.2f}s", flush=True)

        dist_infos = list((venv / "lib").glob("python3*/site-packages/humus_http-*.dist-info"))
        if "Successfully installed humus_http" not in done.stdout:
            fail(f"pip did not install humus_http into the environment:\n{done.stdout}")
        if len(dist_infos) != 1:
            fail(f"expected one humus_http dist-info in the environment, found {dist_infos}")
        tags = [line.split(":", 1)[1].strip() for line in (dist_infos[0] / "WHEEL").read_text().splitlines()
                if line.startswith("Tag:")]
        if not tags or not all("manylinux" in tag for tag in tags):
            fail(f"the installed distribution's tags are {tags}, not the repaired wheel's")
        site = dist_infos[0].parent
        libs = site / "humus_http.libs"
        print(f"installed {dist_infos[0].name}, tag {' '.join(tags)}; "
              f"humus_http.libs/ holds {len(list(libs.iterdir())) if libs.is_dir() else 0} libraries")

        step("an HTTPS call (HTTP/2, the test CA) from the fresh environment, same PATH")
        with TestServer() as server:
            port = server.port("https")
            done = subprocess.run([str(python), "-I", "-c", CHILD, server.url("https"), str(server.ca_file),
                                   f"{SERVER_NAME}:{port}", f"127.0.0.1:{port}"],
                                  env=env, cwd=work, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode != 0:
            fail(f"the call failed:\n{done.stdout}{done.stderr}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"status {result['status']} {result['http_version']}")
        if result["status"] != 200 or result["http_version"] != "HTTP/2":
            fail(f"expected 200 over HTTP/2, got {result['status']} {result['http_version']}")
        if Path(result["prefix"]) != venv:
            fail(f"the call ran in {result['prefix']}, not the fresh environment {venv}")
        if not Path(result["native"]).resolve().is_relative_to(site.resolve()):
            fail(f"humus_http._native came from {result['native']}, not the environment's {site}")

        step("the libraries mapped into that process")
        # libcurl and nghttp2 only from the wheel. OpenSSL from the wheel too; the system's copy may be mapped
        # beside it only for the interpreter's own ssl module (asyncio imports it), which libcurl does not use:
        # ldd below shows that every library of the wheel finds its OpenSSL in humus_http.libs/.
        for name in VENDORED:
            paths = [p for p in result["mapped"] if Path(p).name.startswith((name + "-", name + "."))]
            inside = [p for p in paths if Path(p).resolve().parent == libs.resolve()]
            outside = [p for p in paths if p not in inside]
            if not inside:
                fail(f"no {name} from {libs} is mapped; mapped: {paths or 'none'}")
            python_own = name in ("libssl", "libcrypto") and result["python_ssl"]
            if outside and not python_own:
                fail(f"{name} is also mapped from outside the wheel: {outside}")
            also = f"; the system's {', '.join(outside)} too, for Python's ssl module" if outside else ""
            print(f"{name}: {', '.join(Path(p).name for p in inside)} (humus_http.libs/){also}")

        step("ldd: the extension and every library of humus_http.libs/ resolve theirs inside the wheel")
        for elf in [Path(result["native"]), *sorted(libs.iterdir())]:
            lines = subprocess.run(["ldd", str(elf)], capture_output=True, text=True, check=True).stdout
            for line in lines.splitlines():
                needed, _, where = line.strip().partition(" => ")
                if "not found" in where:
                    fail(f"{elf.name} needs {needed}, which is not found")
                if needed.startswith(tuple(name + "-" for name in VENDORED)) or needed.startswith(VENDORED):
                    target = Path(where.split(" (")[0])
                    if target.resolve().parent != libs.resolve():
                        fail(f"{elf.name} finds {needed} at {target}, outside {libs}")
        print(f"the extension and {len(list(libs.iterdir()))} libraries: libcurl, OpenSSL and nghttp2 all from "
              "humus_http.libs/, nothing missing")
    print("check_wheel: ok")


if __name__ == "__main__":
    main()
