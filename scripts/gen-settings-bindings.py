#!/usr/bin/env python3
"""Generates the settings surfaces of the Go, Rust and Python bindings from the core's settings schema
(docs/settings.md §3.4): one source for every key, kind, default, bound and doc line, so adding a setting is one
line in src/settings/schema.cc and a run of this script.

    scripts/gen-settings-bindings.py                        # from the committed docs/settings-schema.json
    scripts/gen-settings-bindings.py --library build/dev/libhumus_http.so
                                                            # from a built library; rewrites the dump too
    scripts/gen-settings-bindings.py --check [--library L]  # writes nothing; exit 1 when a file would change
    scripts/gen-settings-bindings.py --schema S --root DIR  # another schema, generated under DIR

What each binding writes follows from a key's kind alone (a duration is Go's time.Duration, Rust's Duration,
Python's Duration; a value whose zero is valid is a Go pointer; a string key named *_file is a path). The
tables under "What history pinned" hold only what the schema cannot say: names that callers already use
(Go's RetryBudget, Python's Breaker), the enum types of Rust, the Python parameter order. A key they do not
name takes the mechanical form in every binding. Python 3 standard library only.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_DUMP = "docs/settings-schema.json"
GO_OUT = "bindings/go/humushttp/settings_gen.go"
RUST_OUT = "bindings/rust/humus-http/src/settings_gen.rs"
RUST_TEST_OUT = "bindings/rust/humus-http/tests/generated/settings_setters.rs"
PY_VALUES_OUT = "python/humus_http/_settings_gen.py"
PY_CLIENT_OUT = "python/humus_http/_client_gen.py"
SOURCE = "scripts/gen-settings-bindings.py"

# ---- What history pinned (names and shapes callers already use; a new key needs none of it) ----------------

# Go: a group's struct type when it is not <Group>Settings; the initialisms Go spells in capitals.
GO_GROUP_TYPES = {"retry_budget": "RetryBudget"}
GO_INITIALISMS = {"url", "tls", "http", "ca", "pem", "id", "ip", "json", "dns", "ttl", "uri", "tcp"}

# Rust: the enum types of enum keys (each with `as_str`); other enum keys take a &str.
RUST_ENUMS = {"http_version": "HttpVersion", "tls.min_version": "TlsVersion", "classify": "ClassifierPreset",
              "bulkhead.mode": "BulkheadMode", "bulkhead.algorithm": "BulkheadAlgorithm"}
# Groups with a value type of their own, whose setters are generated on it (`Tls::ca_file`).
RUST_GROUP_VALUES = {"tls": "Tls"}
# Keys that settings.rs sets by hand, because their shape is not one value per key: the retry budget's keys
# depend on its policy (the RetryBudget enum).
RUST_HAND_WRITTEN = {"retry_budget", "retry_budget.policy", "retry_budget.tokens", "retry_budget.ratio",
                     "retry_budget.min_per_second", "retry_budget.window"}
# The coverage test's sample values where the key's check wants more than any text (constants of
# tests/settings.rs, or a literal); other text keys are given "x", paths "/etc/x.pem".
RUST_TEST_SAMPLES = {"tls.ca_pem": "CERT", "tls.cert_pem": "CERT", "tls.key_pem": "KEY", "hedge.delay": '"p95"'}

# Python: the helper class of each group when it is not the group's name in CamelCase.
PY_GROUP_CLASSES = {"tls": "TLS"}
# A field default other than None ("not given").
PY_FIELD_DEFAULTS = {"retry_budget.policy": "token_bucket"}
# The Python forms of keys that take code there (a plugin key: BreakerPolicy; classify also takes a callable).
# headers: a None value leaves that header out of every call (requests' convention, docs/bindings.md §17.3),
# which only Python's layer above the settings document knows.
PY_TYPES = {"timeout": "Duration | Timeout | UseClientDefault", "classify": None,
            "breaker_policy": "BreakerPolicy | None", "headers": "Mapping[str, str | None] | None"}
PY_DEFAULTS = {"timeout": "USE_CLIENT_DEFAULT"}
# The order of Client's keyword arguments as released (schema keys and the Python-only runtime, auth,
# follow_redirects, event_hooks); schema keys not listed come before auth, in schema order.
PY_ORDER = ["timeout", "attempt_timeout", "connect_timeout", "max_attempts", "backoff_base", "backoff_max",
            "max_retry_after", "retry_budget", "breaker", "trip", "probe", "bulkhead", "max_idle_connections",
            "idle_timeout", "max_connection_lifetime", "max_response_headers", "max_response_body", "decompress",
            "tls", "http_version", "headers", "classify", "breaker_policy", "runtime", "forward_authorization",
            "forward_scenario", "auth", "follow_redirects", "event_hooks"]
PY_ONLY = {"runtime": ("Runtime | None", "None"), "auth": ("AuthTypes | None", "None"),
           "follow_redirects": ("bool", "True"), "event_hooks": ("EventHooks | None", "None")}


# ---- The schema -----------------------------------------------------------------------------------------------

@dataclass
class Key:
    """One entry of the schema document (humus_settings_schema_json)."""

    path: str
    kind: str
    doc: str
    default: Any
    entry: dict[str, Any]
    children: list[Key] = field(default_factory=list)

    @property
    def leaf(self) -> str:
        return self.path.rpartition(".")[2]

    @property
    def nullable(self) -> bool:
        return bool(self.entry.get("nullable"))

    @property
    def required(self) -> bool:
        return bool(self.entry.get("required"))

    @property
    def plugin(self) -> bool:
        return bool(self.entry.get("plugin"))

    @property
    def choices(self) -> list[str]:
        return list(self.entry.get("choices", []))

    @property
    def is_path(self) -> bool:
        return self.kind == "string" and self.leaf.endswith("_file")

    def zero_is_valid(self) -> bool:
        """Whether a zero value means something of its own (0 idle connections, a wait of 0), so a binding that
        leaves zero fields out needs "not given" apart from zero."""
        if self.nullable:
            return True
        if self.kind in ("duration", "count", "bytes"):
            return not self.entry.get("min_exclusive") and self.entry.get("min") in (0, "0s")
        return self.kind == "bool" and self.default is True

    def wide(self) -> bool:
        """An integer whose bound passes 32 bits (max_response_body's terabyte)."""
        return self.kind == "bytes" and int(self.entry.get("max", 0)) > 0xFFFFFFFF

    def summary(self) -> str:
        """The doc line with the default and the bounds: what every binding's comment says of the key."""
        notes: list[str] = []
        if self.required:
            notes.append("required")
        elif self.kind in ("duration", "count", "bytes", "number", "share", "bool", "enum") and \
                self.default is not None:
            notes.append(f"default {json.dumps(self.default) if self.kind == 'enum' else fmt(self.default)}")
        if "min" in self.entry:
            low = f"{'>' if self.entry.get('min_exclusive') else '>='} {fmt(self.entry['min'])}"
            notes.append(low + (f", <= {fmt(self.entry['max'])}" if "max" in self.entry else ""))
        if self.kind == "enum":
            notes.append("one of " + ", ".join(json.dumps(c) for c in self.choices))
        return f"{self.doc} ({'; '.join(notes)})" if notes else self.doc


def fmt(value: Any) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    return str(value)


def load_tree(document: dict[str, Any]) -> list[Key]:
    """The top-level keys in schema order, each object with its keys under it."""
    top: list[Key] = []
    by_path: dict[str, Key] = {}
    for entry in document["keys"]:
        key = Key(entry["key"], entry["kind"], entry.get("doc", ""), entry.get("default"), entry)
        by_path[key.path] = key
        parent, dot, _ = key.path.rpartition(".")
        if not dot:
            top.append(key)
        elif parent in by_path and by_path[parent].kind == "object":
            by_path[parent].children.append(key)
        else:
            raise SystemExit(f"{SOURCE}: schema key {key.path} comes before its object {parent}")
    return top


def schema_from_library(library: str) -> dict[str, Any]:
    lib = ctypes.CDLL(library)
    lib.humus_settings_schema_json.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                                               ctypes.c_void_p]
    lib.humus_settings_schema_json.restype = ctypes.c_int32
    lib.humus_string_free.argtypes = [ctypes.c_void_p]
    text, size = ctypes.c_void_p(), ctypes.c_size_t()
    status = lib.humus_settings_schema_json(ctypes.byref(text), ctypes.byref(size), None)
    if status != 0:
        raise SystemExit(f"{SOURCE}: humus_settings_schema_json returned {status}")
    try:
        document: dict[str, Any] = json.loads(ctypes.string_at(text, size.value).decode())
    finally:
        lib.humus_string_free(text)
    return document


def schema_dump(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


# ---- Names ----------------------------------------------------------------------------------------------------

def camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def go_name(name: str) -> str:
    return "".join(part.upper() if part in GO_INITIALISMS else part.capitalize() for part in name.split("_"))


def go_group_type(key: Key) -> str:
    return GO_GROUP_TYPES.get(key.path, go_name(key.path) + "Settings")


def py_group_class(key: Key) -> str:
    return PY_GROUP_CLASSES.get(key.path, camel(key.path))


def rust_ident(name: str) -> str:
    return name.replace(".", "_")


# ---- Go -------------------------------------------------------------------------------------------------------

GO_HEADER = f"""// Code generated by {SOURCE}; DO NOT EDIT.
// From {SCHEMA_DUMP}: a setting is added to the schema (src/settings/schema.cc), not here (docs/settings.md §3.4).

//go:build cgo

package humushttp
"""

GO_SETTINGS_DOC = """\
// Settings are one dependency's settings (docs/settings.md §3), in the JSON form every binding shares: the JSON
// tags are the §3 names, durations travel as strings such as "250ms". A zero field is left out, so the
// library's default applies; the fields whose zero is a valid value of its own (a wait of 0, no idle
// connection, false where the default is true) are pointers for that reason. Only what is set reaches the
// library, which alone holds the defaults (SettingsSchemaJSON lists them) and checks the values set against
// each other. The library checks every value when a client is built and reports every bad one at once (ErrConfig,
// Error.Fields naming the keys).
//
// Settings are plain values: build them on one goroutine, then share them read-only.
"""


def go_type(key: Key) -> str:
    base = {"duration": "time.Duration", "count": "int", "number": "float64", "share": "float64",
            "enum": "string", "string": "string", "bool": "bool", "map": "map[string]string",
            "plugin": "*Plugin"}
    if key.kind == "object":
        return "*" + go_group_type(key)
    if key.kind == "bytes":
        kind = "int64" if key.wide() else "int"
    elif key.kind in base:
        kind = base[key.kind]
    else:
        raise SystemExit(f"{SOURCE}: {key.path}: no Go form for the kind {key.kind!r}")
    if key.kind in ("map", "plugin", "string", "enum"):
        return kind
    return "*" + kind if key.zero_is_valid() else kind


def go_struct(doc: str, name: str, keys: list[Key]) -> list[str]:
    rows: list[tuple[str, str, str, str]] = []
    for key in keys:
        rows.append((go_name(key.leaf), go_type(key), f'`json:"{key.leaf}"`', key.summary()))
        if key.plugin and key.kind != "plugin":  # a name or a plugin object: the object in a second field
            rows.append((go_name(key.leaf) + "Plugin", "*Plugin", f'`json:"-" humus:"{key.leaf}"`',
                         f"or a plugin's (docs/retries.md §5.4a), not with {go_name(key.leaf)}"))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [doc.rstrip("\n"), f"type {name} struct {{"]
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(3)]
        lines.append("\t" + " ".join(cells) + " // " + row[3])
    lines.append("}")
    return lines


def generate_go(top: list[Key]) -> str:
    everything = top + [c for k in top for c in k.children]
    out = [GO_HEADER]
    needs = sorted({"time"} if any(k.kind == "duration" for k in everything) else set())
    if len(needs) == 1:
        out.append(f'import "{needs[0]}"\n')
    elif needs:
        out.append("import (\n" + "".join(f'\t"{n}"\n' for n in needs) + ")\n")
    out.append("\n".join(go_struct(GO_SETTINGS_DOC, "Settings", top)) + "\n")
    for group in (k for k in top if k.kind == "object"):
        doc = (f"// {go_group_type(group)} are the settings under \"{group.path}\": {group.doc}.\n"
               "// A plain value, as Settings are.\n")
        out.append("\n".join(go_struct(doc, go_group_type(group), group.children)) + "\n")
    return "\n".join(out)


# ---- Rust -----------------------------------------------------------------------------------------------------

def rust_doc(key: Key, extra: str = "") -> list[str]:
    text = f"`{key.path}`: {key.summary()}.{extra}".replace("...", "…")
    return ["/// " + line.strip() for line in py_wrap(text, "", width=108)]


def rust_setter(key: Key, receiver: str, write: str) -> list[str] | None:
    """The method that writes `key`: `write` is how a JSON value is put ("self.top(\\"k\\", {})")."""
    name = key.leaf if receiver != "SettingsBuilder" or "." not in key.path else rust_ident(key.path)
    if key.kind == "duration":
        param, value = "d: Duration", "Json::duration(d)"
    elif key.kind in ("count", "bytes"):
        param, value = f"n: {'u64' if key.wide() else 'u32'}", "Json::Int(n.into())"
    elif key.kind in ("number", "share"):
        param, value = "x: f64", "Json::number(x)"
    elif key.kind == "bool":
        param, value = "on: bool", "Json::Bool(on)"
    elif key.kind == "enum" and key.path in RUST_ENUMS:
        param, value = f"choice: {RUST_ENUMS[key.path]}", "Json::Str(choice.as_str().to_string())"
    elif key.kind == "enum" or (key.kind == "string" and not key.is_path):
        param, value = "text: &str", "Json::Str(text.to_string())"
    elif key.kind == "string":
        param, value = "path: impl AsRef<Path>", "Json::Str(path.as_ref().to_string_lossy().into_owned())"
    else:
        return None
    if receiver != "SettingsBuilder":  # a group's value type holds its members as text
        value = value.removeprefix("Json::Str(").removesuffix(")")
    return [*rust_doc(key), f"pub fn {name}(self, {param}) -> {receiver} {{", "    " + write.format(value), "}"]


def generate_rust(top: list[Key]) -> str:
    builder: list[list[str]] = []
    values: dict[str, list[list[str]]] = {}
    for key in top:
        if key.path in RUST_HAND_WRITTEN and key.kind != "object":
            continue
        if key.required or key.kind == "plugin":
            continue  # base_url is the builder's argument; a plugin is named through from_json
        if key.kind == "map":
            builder.append([*rust_doc(key, " One entry; repeatable."),
                            f"pub fn {key.path.removesuffix('s')}(self, name: &str, value: &str) -> SettingsBuilder {{",
                            f'    self.nested("{key.path}", name, Json::Str(value.to_string()))', "}"])
            continue
        if key.kind == "object" and key.path in RUST_GROUP_VALUES:
            value_type = RUST_GROUP_VALUES[key.path]
            builder.append([*rust_doc(key), f"pub fn {key.path}(mut self, value: &{value_type}) -> SettingsBuilder {{",
                            f'    self.json.set("{key.path}", value.to_json());', "    self", "}"])
            methods = values.setdefault(value_type, [])
            for child in key.children:
                method = rust_setter(child, value_type, f'self.with("{child.leaf}", {{}})')
                if method is None or child.kind not in ("string", "enum"):
                    raise SystemExit(f"{SOURCE}: {child.path}: {value_type} holds text members only")
                methods.append(method)
            continue
        if key.kind == "object":
            for child in key.children:
                if child.path in RUST_HAND_WRITTEN:
                    continue
                method = rust_setter(child, "SettingsBuilder", f'self.nested("{key.path}", "{child.leaf}", {{}})')
                if method is None:
                    raise SystemExit(f"{SOURCE}: {child.path}: no Rust form for the kind {child.kind!r}")
                builder.append(method)
            continue
        method = rust_setter(key, "SettingsBuilder", f'self.top("{key.path}", {{}})')
        if method is None:
            raise SystemExit(f"{SOURCE}: {key.path}: no Rust form for the kind {key.kind!r}")
        builder.append(method)

    enums = sorted({RUST_ENUMS[k.path] for k in top + [c for t in top for c in t.children] if k.path in RUST_ENUMS})
    super_names = sorted({"SettingsBuilder", *values} | (set(enums) - {"ClassifierPreset"}))
    text = " ".join(line for method in builder + [m for ms in values.values() for m in ms] for line in method)
    out = [*generated_header("// "), "",
           "//! The typed setters of docs/settings.md §3's keys, one per key, named after it (`breaker.window` is",
           "//! `breaker_window`): each writes the key's JSON form, which the library checks.", ""]
    uses = []
    if "Path>" in text:
        uses.append("use std::path::Path;")
    if "Duration" in text:
        uses.append("use std::time::Duration;")
    out += uses + ([""] if uses else [])
    out.append(f"use super::{{{', '.join(super_names)}}};" if len(super_names) > 1 else
               f"use super::{super_names[0]};")
    if "ClassifierPreset" in enums:
        out.append("use crate::classify::ClassifierPreset;")
    out.append("use crate::json::Json;")
    for receiver, methods in [("SettingsBuilder", builder), *values.items()]:
        out += ["", f"impl {receiver} {{"]
        for i, method in enumerate(methods):
            if i:
                out.append("")
            out += ["    " + line for line in method]
        out.append("}")
    return "\n".join(out) + "\n"


def rust_test_row(key: Key, call: str) -> list[str]:
    """The coverage test's row for a generated setter: `call` is how a builder `b` reaches it, `{}` its value."""
    def row(setter: str) -> list[str]:
        return [f'("{key.path}", {setter}),']

    if key.kind == "duration":
        return row(f"Duration(|b, d| {call.format('d')})")
    if key.kind == "count":
        return row(f"Count(|b, n| {call.format('n')})")
    if key.kind == "bytes":
        return row(f"Bytes(|b, n| {call.format('n' if key.wide() else 'n.try_into().unwrap()')})")
    if key.kind in ("number", "share"):
        return row(f"{key.kind.capitalize()}(|b, x| {call.format('x')})")
    if key.kind == "bool":
        return row(f"Bool(|b, on| {call.format('on')})")
    if key.kind == "enum":
        choices = [f'    ("{c}", |b| {call.format(json.dumps(c))}),' for c in key.choices]
        return ["(", f'    "{key.path}",', "    Enum(&[", *["    " + c for c in choices], "    ]),", "),"]
    sample = RUST_TEST_SAMPLES.get(key.path, '"/etc/x.pem"' if key.is_path else '"x"')
    return row(f"Text(|b, s| {call.format('s')}, {sample})")


def generate_rust_test(top: list[Key]) -> str:
    """The rows of tests/settings.rs's coverage table for the generated setters (the hand-written ones, typed by
    hand, have their rows there): every key is set through its method, read back and checked by the library."""
    rows: list[str] = []
    for key in top:
        if key.required or key.kind == "plugin" or key.path in RUST_ENUMS:
            continue
        if key.kind == "map":
            rows += [f'("{key.path}", Map(|b, name, value| b.{key.path.removesuffix("s")}(name, value))),']
        elif key.kind == "object":
            value_type = RUST_GROUP_VALUES.get(key.path)
            if key.path not in RUST_HAND_WRITTEN and value_type is None:
                rows.append(f'("{key.path}", Object),')
            for child in key.children:
                if child.path in RUST_HAND_WRITTEN or child.path in RUST_ENUMS:
                    continue
                call = (f"b.{key.path}(&{value_type}::new().{child.leaf}({{}}))" if value_type else
                        f"b.{rust_ident(child.path)}({{}})")
                rows += rust_test_row(child, call)
        elif key.path not in RUST_HAND_WRITTEN:
            rows += rust_test_row(key, f"b.{key.path}({{}})")
    out = [*generated_header("// "), "",
           "/// The coverage table's rows of the setters generated from the schema (src/settings_gen.rs).",
           "fn generated_setters() -> Vec<(&'static str, Setter)> {",
           "    use Setter::*;",
           "    vec!["]
    out += ["        " + row for row in rows]
    out += ["    ]", "}"]
    return "\n".join(out) + "\n"


# ---- Python ---------------------------------------------------------------------------------------------------

def py_type(key: Key) -> str:
    if key.path in PY_TYPES and PY_TYPES[key.path] is not None:
        return str(PY_TYPES[key.path])
    kinds = {"duration": "Duration", "count": "int", "bytes": "int", "number": "float", "share": "float",
             "bool": "bool", "map": "Mapping[str, str]", "plugin": "Mapping[str, Any]"}
    if key.kind == "object":
        base = py_group_class(key)
    elif key.kind == "enum":
        base = "Literal[" + ", ".join(json.dumps(c) for c in key.choices) + "]"
        if key.plugin:  # a preset's name, or code in Python
            base += " | Classifier"
    elif key.kind == "string":
        base = "str | os.PathLike[str]" if key.is_path else "str"
    elif key.kind in kinds:
        base = kinds[key.kind]
    else:
        raise SystemExit(f"{SOURCE}: {key.path}: no Python form for the kind {key.kind!r}")
    return base if key.path in PY_FIELD_DEFAULTS else base + " | None"


def py_form(key: Key) -> str:
    """How a field's value reaches the JSON form (_settings_values.FORMS)."""
    return "duration" if key.kind == "duration" else "path" if key.is_path else "value"


def py_wrap(text: str, indent: str, width: int = 116) -> list[str]:
    lines, line = [], ""
    for word in text.split():
        if line and len(indent) + len(line) + 1 + len(word) > width:
            lines.append(indent + line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([indent + line] if line else [])


def py_items(head: str, items: list[str], tail: str, indent: str = "    ") -> list[str]:
    """`head` + the items joined by ", " + `tail` on one line when it fits, else one item group per line."""
    line = head + ", ".join(items) + tail
    if len(line) <= 116:
        return [line]
    lines, current = [head.rstrip()], ""
    for item in items:
        piece = f"{current} {item}," if current else f"{item},"
        if current and len(indent) + len(piece) > 116:
            lines.append(indent + current)
            piece = f"{item},"
        current = piece
    return lines + [indent + current, head[:len(head) - len(head.lstrip())] + tail.strip()]


def py_names(names: set[str]) -> str:
    """Names to import, sorted as isort does: constants first."""
    return ", ".join(sorted(names, key=lambda n: (not n.isupper(), n)))


def generated_header(comment: str) -> list[str]:
    return [f"{comment}Generated by {SOURCE} from {SCHEMA_DUMP}: do not edit.",
            f"{comment}A setting is added to the schema (src/settings/schema.cc), not here (docs/settings.md §3.4)."]


def generate_python_values(top: list[Key]) -> str:
    groups = [k for k in top if k.kind == "object"]
    everything = top + [c for k in groups for c in k.children]
    out = [*generated_header('"""')[:1], generated_header("")[1],
           "",
           "The settings' groups as frozen values (Breaker, Trip, ...), and what settings_json needs to know of each",
           'key."""',
           "from __future__ import annotations", ""]
    imports = ["from dataclasses import dataclass"]
    if any(k.is_path for k in everything):
        imports.insert(0, "import os")
    typing_names = sorted({"Literal"} if any(k.kind == "enum" for k in everything) else set())
    out += imports
    if typing_names:
        out.append(f"from typing import {', '.join(typing_names)}")
    out += ["", "from ._settings_values import Duration, Group", ""]
    out += py_items("__all__ = [", [json.dumps(n) for n in sorted(py_group_class(g) for g in groups)], "]")
    durations = sorted(k.path for k in top if k.kind == "duration")
    out += ["", "#: The top-level keys whose values are durations (written in the settings' string form)."]
    out += py_items("DURATION_KEYS = frozenset({", [json.dumps(d) for d in durations], "})")
    for group in groups:
        name = py_group_class(group)
        out += ["", "", "@dataclass(frozen=True)", f"class {name}(Group):"]
        doc = (f'"""The ``{group.path}`` settings: {group.doc}. A field left None is not given: the core\'s default '
               f'applies. A frozen value: share it between threads freely."""')
        out += py_wrap(doc, "    ")
        out.append("")
        out += py_items("    FORMS = {", [f"{json.dumps(c.leaf)}: {json.dumps(py_form(c))}" for c in group.children],
                        "}", indent="        ")
        out.append("")
        for child in group.children:
            default = PY_FIELD_DEFAULTS.get(child.path)
            out += [f"    #: {line.strip()}" for line in py_wrap(child.summary(), "    ", width=113)]
            out.append(f"    {child.leaf}: {py_type(child)} = {json.dumps(default) if default else 'None'}")
    out.append("")
    out.append("")
    out.append("#: The helper class of each group key.")
    out += py_items("GROUPS: dict[str, type[Group]] = {",
                    [f"{json.dumps(g.path)}: {py_group_class(g)}" for g in groups], "}")
    return "\n".join(out) + "\n"


def generate_python_client(top: list[Key]) -> str:
    settings = [k for k in top if not k.required]
    order = [name for name in PY_ORDER if name in PY_ONLY or any(k.path == name for k in settings)]
    new = [k.path for k in settings if k.path not in order]
    at = order.index("auth")
    order[at:at] = new
    by_path = {k.path: k for k in settings}
    params: list[str] = []
    for name in order:
        if name in PY_ONLY:
            hint, default = PY_ONLY[name]
        else:
            hint, default = py_type(by_path[name]), PY_DEFAULTS.get(name, "None")
        params.append(f"{name}: {hint} = {default}")
    groups = sorted({py_group_class(k) for k in settings if k.kind == "object"})
    out = [*generated_header('"""')[:1], generated_header("")[1],
           "",
           'The keyword arguments of Client and AsyncClient: one per settings key, typed by its kind."""',
           "from __future__ import annotations", "",
           "import abc"]
    if any(k.is_path for k in settings):
        out.append("import os")
    out += ["from collections.abc import Mapping",
            "from typing import Any, Literal", "",
            "from ._auth import AuthTypes",
            "from ._hooks import EventHooks",
            "from ._settings import BreakerPolicy, Classifier, Runtime"]
    out.append(f"from ._settings_gen import {py_names(set(groups))}")
    out.append("from ._settings_values import Duration")
    out += ["from ._timeout import USE_CLIENT_DEFAULT, Timeout, UseClientDefault", "",
            '__all__ = ["ClientArguments"]', "", "",
            "class ClientArguments(abc.ABC):",
            '    """The constructor of the clients: its keyword arguments are the settings of docs/settings.md §3',
            '    (see Client) and the options the Python client applies itself (runtime, auth, follow_redirects,',
            '    event_hooks)."""', ""]
    signature = wrap_signature("    def __init__(", ["self", "base_url: str", "*", *params], ") -> None:")
    out += signature
    out += py_items("        settings: dict[str, object] = {", [f"{json.dumps(k.path)}: {k.path}" for k in settings],
                    "        }", indent="            ")
    out.append("        self._configure(base_url, settings, runtime=runtime, auth=auth, "
               "follow_redirects=follow_redirects,")
    out.append("                        event_hooks=event_hooks)")
    out += ["", "    @abc.abstractmethod",
            "    def _configure(self, base_url: str, settings: dict[str, object], *, runtime: Runtime | None,",
            "                   auth: AuthTypes | None, follow_redirects: bool, event_hooks: EventHooks | None) "
            "-> None:",
            '        """Builds the client from its arguments: ``settings`` holds every settings key, None where not',
            '        given."""']
    text = "\n".join(out) + "\n"
    # Only the typing names the signature uses are imported (a linter refuses the others).
    signature_text = "\n".join(signature)
    if "Mapping[" not in signature_text:
        text = text.replace("from collections.abc import Mapping\n", "")
    used = [n for n in ("Any", "Literal") if f"{n}[" in signature_text]
    text = text.replace("from typing import Any, Literal\n",
                        f"from typing import {', '.join(used)}\n" if used else "")
    return text


def wrap_signature(head: str, params: list[str], tail: str) -> list[str]:
    """A def line wrapped between parameters, continuation lines under the first parameter."""
    indent = " " * len(head)
    lines, line = [], head
    for i, param in enumerate(params):
        piece = param + ("," if i < len(params) - 1 else tail)
        candidate = line + ("" if line == head else " ") + piece
        if len(candidate) > 116 and line != head:
            lines.append(line)
            line = indent + piece
        else:
            line = candidate
    return lines + [line]


# ---- Driver ---------------------------------------------------------------------------------------------------

def outputs(document: dict[str, Any]) -> dict[str, str]:
    top = load_tree(document)
    return {GO_OUT: generate_go(top), RUST_OUT: generate_rust(top), RUST_TEST_OUT: generate_rust_test(top),
            PY_VALUES_OUT: generate_python_values(top), PY_CLIENT_OUT: generate_python_client(top)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--schema", type=Path, help=f"the schema document (default: <root>/{SCHEMA_DUMP})")
    source.add_argument("--library", help=f"a built libhumus_http to read the schema from (also writes {SCHEMA_DUMP})")
    parser.add_argument("--root", type=Path, default=ROOT, help="where the generated files go (default: the checkout)")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file would change")
    args = parser.parse_args()

    files: dict[str, str] = {}
    if args.library:
        document = schema_from_library(args.library)
        files[SCHEMA_DUMP] = schema_dump(document)
    else:
        document = json.loads((args.schema or args.root / SCHEMA_DUMP).read_text(encoding="utf-8"))
    files.update(outputs(document))

    stale = []
    for path, text in files.items():
        target = args.root / path
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            continue
        stale.append(path)
        if not args.check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    if args.check and stale:
        print(f"{SOURCE}: out of date with the settings schema: {', '.join(stale)}\n"
              f"  regenerate: {SOURCE} --library <build>/libhumus_http.so", file=sys.stderr)
        return 1
    for path in stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
