# Sourced (not run) by scripts/bootstrap.sh and scripts/test.sh, from the repository's root: what
# scripts/install-deps.sh installed comes first on PATH, so every python3 the builds and tests start (ctest's
# test-server commands, the CLI's pytest files, the Go and Rust tests' test server, the soak, the wheel) is the
# project's virtual environment's, with h2, h11 and pytest, and a Go it installed is the go that runs.
# For your own shell: `. scripts/dev-env.sh` at the root.
if [ -d "$PWD/build/tools/go/bin" ]; then
  PATH="$PWD/build/tools/go/bin:$PATH"
fi
PATH="$PWD/build/venv/bin:$PATH"
VIRTUAL_ENV="$PWD/build/venv"
# The test servers' interpreter where the C++, Go and Rust harnesses read one (HUMUS_TEST_PYTHON, HUMUS_PYTHON).
HUMUS_TEST_PYTHON="$PWD/build/venv/bin/python3"
HUMUS_PYTHON="$HUMUS_TEST_PYTHON"
export PATH VIRTUAL_ENV HUMUS_TEST_PYTHON HUMUS_PYTHON
