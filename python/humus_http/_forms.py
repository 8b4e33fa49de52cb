"""data= (form-encoded) and files= (multipart) bodies, and cookies= as a Cookie header, encoded as httpx encodes
them: given the same boundary, a multipart body is byte for byte httpx's."""
from __future__ import annotations

import io
import os
import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import IO, Any

__all__ = ["CookieTypes", "DataTypes", "FileTypes", "FilesTypes", "cookie_header", "encode_form"]

#: What ``data=`` accepts: form fields, a value being str, bytes, int, float, bool, None or a list of them
#: (repeated fields).
DataTypes = Mapping[str, Any]
#: One file's content: bytes, str (sent UTF-8) or a file opened in binary mode.
FileContent = bytes | str | IO[bytes]
#: One ``files=`` value: the content (the file name taken from its ``name``), or ``(filename, content)``,
#: ``(filename, content, content_type)``, ``(filename, content, content_type, headers)``, as in httpx.
FileTypes = (FileContent | tuple[str | None, FileContent] | tuple[str | None, FileContent, str | None]
             | tuple[str | None, FileContent, str | None, Mapping[str, str]])
#: What ``files=`` accepts: a mapping of field name to file, or (field name, file) pairs (repeatable).
FilesTypes = Mapping[str, FileTypes] | Sequence[tuple[str, FileTypes]]
#: What ``cookies=`` accepts: a mapping or (name, value) pairs, sent as one Cookie header as given.
CookieTypes = Mapping[str, str] | Sequence[tuple[str, str]]

# HTML5's escaping of a form-data parameter value (as httpx): quote, backslash and control characters.
_FORM_ESCAPES = {'"': "%22", "\\": "\\\\", **{chr(c): f"%{c:02X}" for c in range(0x20) if c != 0x1B}}
_FORM_ESCAPE_RE = re.compile("|".join(re.escape(c) for c in _FORM_ESCAPES))


def _primitive(value: Any, what: str) -> str | bytes:
    if value is True or value is False:
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    raise TypeError(f"{what} must be str, bytes, int, float, bool or None, not {type(value).__name__}")


def _fields(data: DataTypes) -> list[tuple[str, str | bytes]]:
    if not isinstance(data, Mapping):
        raise TypeError(f"data= takes a mapping of form fields (for raw bytes or text use content=), not "
                        f"{type(data).__name__}")
    out: list[tuple[str, str | bytes]] = []
    for name, value in data.items():
        for item in value if isinstance(value, (list, tuple)) else [value]:
            out.append((str(name), _primitive(item, f"form field {name!r}")))
    return out


def _param(name: str, value: str) -> bytes:
    return f'{name}="{_FORM_ESCAPE_RE.sub(lambda m: _FORM_ESCAPES[m.group(0)], value)}"'.encode()


def _file_part(name: str, value: FileTypes) -> tuple[bytes, bytes]:
    """A file field's part headers and content."""
    headers: Mapping[str, str] = {}
    content_type: str | None = None
    if isinstance(value, tuple):
        if not 2 <= len(value) <= 4:
            raise TypeError(f"file {name!r}: a tuple is (filename, content[, content_type[, headers]])")
        filename, content = value[0], value[1]
        if len(value) >= 3:
            content_type = value[2]
        if len(value) == 4:
            headers = value[3]
    else:
        from pathlib import PurePath  # here, not at the top: only a file upload needs it

        filename, content = PurePath(str(getattr(value, "name", "upload"))).name, value
    if content_type is None and filename:
        import mimetypes  # likewise (with pathlib, about 2 ms of every import of the package)

        content_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
    part_headers = dict(headers)
    if content_type is not None and not any("content-type" in key.lower() for key in part_headers):
        part_headers["Content-Type"] = content_type
    head = [b"Content-Disposition: form-data; ", _param("name", name)]
    if filename:
        head += [b"; ", _param("filename", filename)]
    for key, val in part_headers.items():
        head += [f"\r\n{key}: ".encode(), val.encode()]
    head.append(b"\r\n\r\n")
    return b"".join(head), _file_bytes(name, content)


def _file_bytes(name: str, content: FileContent) -> bytes:
    if isinstance(content, str):
        return content.encode()
    if isinstance(content, (bytes, bytearray, memoryview)):
        return bytes(content)
    if isinstance(content, io.TextIOBase):
        raise TypeError(f"file {name!r} must be opened in binary mode, not text mode")
    if hasattr(content, "seek"):  # read from its start, as httpx does
        try:
            content.seek(0)
        except (io.UnsupportedOperation, OSError):
            pass
    data = content.read()
    if not isinstance(data, bytes):
        raise TypeError(f"file {name!r} must be opened in binary mode (read() gave {type(data).__name__})")
    return data


def _boundary_of(content_type: str | None) -> bytes | None:
    """The boundary of a caller's ``multipart/form-data; boundary=...`` Content-Type (as httpx uses it)."""
    if not content_type or not content_type.startswith("multipart/form-data"):
        return None
    for section in content_type.split(";")[1:]:
        section = section.strip()
        if section.lower().startswith("boundary="):
            return section[len("boundary="):].strip('"').encode("ascii")
    return None


def encode_form(data: DataTypes | None, files: FilesTypes | None,
                content_type: str | None) -> tuple[bytes, str | None]:
    """The body of ``data=`` and ``files=`` and the Content-Type it needs (None when the caller's
    ``content_type`` stays): ``application/x-www-form-urlencoded`` for data alone, ``multipart/form-data`` with
    files, the boundary taken from the caller's multipart Content-Type when it names one. Files are read into
    memory."""
    fields = _fields(data) if data is not None else []
    if not files:
        body = urllib.parse.urlencode([(k, v) for k, v in fields], doseq=True).encode()
        return body, "application/x-www-form-urlencoded"
    given = _boundary_of(content_type)
    boundary = given if given is not None else os.urandom(16).hex().encode("ascii")
    parts: list[bytes] = []
    for name, value in fields:
        parts += [b"--" + boundary + b"\r\n", b"Content-Disposition: form-data; ", _param("name", name),
                  b"\r\n\r\n", value if isinstance(value, bytes) else value.encode(), b"\r\n"]
    items = files.items() if isinstance(files, Mapping) else files
    for name, file in items:
        head, content = _file_part(name, file)
        parts += [b"--" + boundary + b"\r\n", head, content, b"\r\n"]
    parts.append(b"--" + boundary + b"--\r\n")
    return b"".join(parts), (None if given is not None else f"multipart/form-data; boundary={boundary.decode()}")


def cookie_header(cookies: CookieTypes) -> str:
    """``cookies=`` as a Cookie header value, ``name=value`` pairs joined by ``"; "`` in the order given."""
    items = cookies.items() if isinstance(cookies, Mapping) else cookies
    pairs = []
    for name, value in items:
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"cookies must be str names and values, not {type(name).__name__}="
                            f"{type(value).__name__}")
        if any(c in name + value for c in ";\r\n\0") or "=" in name:
            raise ValueError(f"cookie {name!r}: a name or value with ';', CR, LF or NUL (or '=' in a name) "
                             f"cannot be sent in a Cookie header")
        pairs.append(f"{name}={value}")
    return "; ".join(pairs)
