"""The bindings' settings surfaces are generated from the core's schema (docs/settings.md §3.4): the committed
files are what scripts/gen-settings-bindings.py writes, the committed schema is the library's, and a key added to
the schema appears in the Go, Rust and Python surfaces with no other edit."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / "scripts" / "gen-settings-bindings.py"
SCHEMA = ROOT / "docs" / "settings-schema.json"

pytestmark = pytest.mark.skipif(not GENERATOR.is_file(), reason="needs the source checkout (scripts/)")


def generate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(GENERATOR), *args], capture_output=True, text=True, timeout=60,
                          check=False)


def test_the_committed_bindings_are_what_the_generator_writes() -> None:
    done = generate("--check")
    assert done.returncode == 0, done.stderr


def test_the_committed_schema_is_the_librarys() -> None:
    from humus_http import _native

    # The installed extension carries the core it was built with: its schema is the one the dump must hold.
    assert json.loads(_native.settings_schema_json()) == json.loads(SCHEMA.read_text(encoding="utf-8"))


def test_a_key_added_to_the_schema_appears_in_every_binding(tmp_path: Path) -> None:
    document = json.loads(SCHEMA.read_text(encoding="utf-8"))
    keys = document["keys"]
    at = next(i for i, k in enumerate(keys) if k["key"] == "breaker.probe_timeout") + 1
    keys.insert(at, {"key": "breaker.slow_call_threshold", "kind": "duration", "default": "0s", "min": "0s",
                     "min_exclusive": False, "doc": "a slower call counts as a failure; 0: none"})
    keys += [
        {"key": "hedge_after", "kind": "duration", "default": "1s", "min": "0s", "min_exclusive": True,
         "doc": "send a second attempt when the first is this late"},
        {"key": "max_redirects", "kind": "count", "default": 10, "min": 0, "min_exclusive": False, "max": 20,
         "doc": "redirects followed within the origin"},
        {"key": "proxy_mode", "kind": "enum", "default": "none", "choices": ["none", "connect"],
         "doc": "how the dependency is reached"},
        {"key": "dns_cache", "kind": "bool", "default": True, "doc": "keep resolved addresses"},
    ]
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(document), encoding="utf-8")

    done = generate("--schema", str(schema), "--root", str(tmp_path))
    assert done.returncode == 0, done.stderr

    go = (tmp_path / "bindings/go/humushttp/settings_gen.go").read_text(encoding="utf-8")

    def go_field(name: str, go_type: str, key: str) -> bool:
        return re.search(rf"^\t{name} +{re.escape(go_type)} +`json:\"{key}\"` +// ", go, re.MULTILINE) is not None

    assert go_field("HedgeAfter", "time.Duration", "hedge_after")
    assert go_field("MaxRedirects", "*int", "max_redirects")  # 0 is a valid count: a pointer, apart from unset
    assert go_field("ProxyMode", "string", "proxy_mode")
    assert go_field("DNSCache", "*bool", "dns_cache")  # false is not the default: a pointer
    assert go_field("SlowCallThreshold", "*time.Duration", "slow_call_threshold")

    rust = (tmp_path / "bindings/rust/humus-http/src/settings_gen.rs").read_text(encoding="utf-8")
    assert "pub fn hedge_after(self, d: Duration) -> SettingsBuilder {" in rust
    assert "pub fn max_redirects(self, n: u32) -> SettingsBuilder {" in rust
    assert "pub fn proxy_mode(self, text: &str) -> SettingsBuilder {" in rust
    assert "pub fn dns_cache(self, on: bool) -> SettingsBuilder {" in rust
    assert 'self.nested("breaker", "slow_call_threshold", Json::duration(d))' in rust
    # ... and in the Rust coverage test's table, which sets each through its method and has the library check it.
    rust_test = (tmp_path / "bindings/rust/humus-http/tests/generated/settings_setters.rs").read_text(encoding="utf-8")
    assert '("hedge_after", Duration(|b, d| b.hedge_after(d))),' in rust_test
    assert '("breaker.slow_call_threshold", Duration(|b, d| b.breaker_slow_call_threshold(d))),' in rust_test
    assert '("connect", |b| b.proxy_mode("connect")),' in rust_test

    values = (tmp_path / "python/humus_http/_settings_gen.py").read_text(encoding="utf-8")
    client = (tmp_path / "python/humus_http/_client_gen.py").read_text(encoding="utf-8")
    assert "    slow_call_threshold: Duration | None = None" in values
    assert '"hedge_after"' in values  # a duration: written in the settings' string form
    for parameter in ("hedge_after: Duration | None = None", "max_redirects: int | None = None",
                      "proxy_mode: Literal[\"none\", \"connect\"] | None = None", "dns_cache: bool | None = None"):
        assert parameter in client, parameter
    # The new keyword arguments come after the released ones and before the Python client's own options.
    assert client.index("forward_scenario:") < client.index("hedge_after:") < client.index("auth:")
    assert '"dns_cache": dns_cache' in client
    for text in (values, client):
        compile(text, "generated", "exec")
