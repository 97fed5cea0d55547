"""Placeholder grammar, types and substitution (transcripts.md §5).

Design: a JSON string is parsed once into a ``Template`` of literal text and
``Placeholder`` parts. Matching (match.py) and substitution (here) both work on
templates, so the grammar lives in one place.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from .jsonlex import JSON, Real

# [TX-PH-01] NAME is `_`, a lower-case name or an upper-case name.
_PLACEHOLDER = re.compile(
    r"\$\{(?P<name>_|[a-z][a-z0-9_]*|[A-Z][A-Z0-9_]*)(?::(?P<type>[a-z0-9]+))?\}"
)

TYPES = frozenset(
    {"any", "string", "nonempty", "int", "number", "bool", "id", "uuid", "rfc3339"}
    | {"sha256", "path", "base64"}
)
# [TX-PH-07] the only types an unbound embedded placeholder may carry
EMBEDDED_TYPES = frozenset(
    {"string", "nonempty", "int", "uuid", "rfc3339", "sha256", "path", "base64"}
)
# [TX-PH-04] fixed runner-provided names; PEER_<CH> and URL_<CH> are added per channel
HOST_NAMES = frozenset(
    {"WORKSPACE", "CONFIG_DIR", "DATA_DIR", "HOME", "FIXTURES", "PYTHON", "RELAY"}
)

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_RFC3339 = r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:Z|[+-](\d{2}):(\d{2}))"
_B64 = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"
_UUID_RE = re.compile(_UUID)
_RFC3339_RE = re.compile(_RFC3339)
_SHA256_RE = re.compile(r"[0-9a-f]{64}")
_B64_RE = re.compile(_B64)

# Lazy regular expressions for unbound embedded placeholders ([TX-PH-07] step 3).
# Groups inside are non-capturing so that group numbers stay ours.
EMBEDDED_PATTERNS: Mapping[str, str] = {
    "string": r".*?",
    "nonempty": r".+?",
    "int": r"-?(?:0|[1-9][0-9]*?)",
    "uuid": _UUID,
    "rfc3339": r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+?)?(?:Z|[+-]\d{2}:\d{2})",
    "sha256": r"[0-9a-f]{64}",
    "path": r"/[^\x00]*?",
    "base64": r"(?:[A-Za-z0-9+/]{4})*?(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?",
}


class PlaceholderError(ValueError):
    """A placeholder that breaks the grammar or cannot be used where it stands."""


@dataclass(frozen=True, slots=True)
class Placeholder:
    """One ``${name}`` or ``${name:type}`` occurrence."""

    name: str
    type: str | None

    @property
    def is_wildcard(self) -> bool:
        return self.name == "_"

    @property
    def is_host(self) -> bool:
        return self.name[0].isupper()

    @property
    def is_binding(self) -> bool:
        return self.name[0].islower()

    def text(self) -> str:
        return "${" + self.name + (":" + self.type if self.type else "") + "}"


@dataclass(frozen=True, slots=True)
class Template:
    """A JSON string split into literal text and placeholders."""

    parts: tuple[str | Placeholder, ...]

    @property
    def whole(self) -> Placeholder | None:
        """The placeholder when the string is exactly one ([TX-PH-02])."""
        if len(self.parts) == 1 and isinstance(self.parts[0], Placeholder):
            return self.parts[0]
        return None

    @property
    def placeholders(self) -> tuple[Placeholder, ...]:
        return tuple(p for p in self.parts if isinstance(p, Placeholder))

    @property
    def literal(self) -> str | None:
        """The unescaped text when there is no placeholder at all."""
        if self.placeholders:
            return None
        return "".join(p for p in self.parts if isinstance(p, str))


@lru_cache(maxsize=8192)
def parse(text: str) -> Template:
    """Split a JSON string into a template.

    Raises:
        PlaceholderError: a ``${`` that does not start a well-formed placeholder
            ([TX-PH-01]; a literal ``${`` is written ``$${``), or an unknown type.
    """
    parts: list[str | Placeholder] = []
    buf: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("$${", i):
            buf.append("${")
            i += 3
            continue
        if text.startswith("${", i):
            m = _PLACEHOLDER.match(text, i)
            if m is None:
                raise PlaceholderError(f"malformed placeholder at offset {i} in {text!r}")
            ptype = m.group("type")
            if ptype is not None and ptype not in TYPES:
                raise PlaceholderError(f"unknown placeholder type {ptype!r} in {text!r}")
            if buf:
                parts.append("".join(buf))
                buf = []
            parts.append(Placeholder(m.group("name"), ptype))
            i = m.end()
            continue
        buf.append(text[i])
        i += 1
    if buf or not parts:
        parts.append("".join(buf))
    return Template(tuple(parts))


def _valid_rfc3339(text: str) -> bool:
    m = _RFC3339_RE.fullmatch(text)
    if m is None:
        return False
    year, month, day, hour, minute, second, off_h, off_m = m.groups()
    try:
        _dt.date(int(year), int(month), int(day))
    except ValueError:
        return False
    if int(hour) > 23 or int(minute) > 59 or int(second) > 60:
        return False
    return off_h is None or (int(off_h) <= 23 and int(off_m) <= 59)


def _valid_base64(text: str) -> bool:
    if _B64_RE.fullmatch(text) is None:
        return False
    try:
        # canonical: unused bits are zero, so re-encoding gives the same text
        return base64.b64encode(base64.b64decode(text, validate=True)).decode() == text
    except (binascii.Error, ValueError):
        return False


def _is_int(value: JSON) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def type_matches(ptype: str | None, value: JSON) -> bool:
    """Check a value against a §5.1 type; the JSON kind is checked first ([TX-PH-09])."""
    t = ptype or "any"
    if t == "any":
        return True
    if t in ("int", "number", "id", "bool"):
        if t == "bool":
            return isinstance(value, bool)
        if t == "number":
            return _is_int(value) or isinstance(value, Real)
        if t == "id":
            return _is_int(value) or isinstance(value, str)
        return _is_int(value)
    if not isinstance(value, str):
        return False
    checks = {
        "string": lambda s: True,
        "nonempty": lambda s: len(s) > 0,
        "uuid": lambda s: _UUID_RE.fullmatch(s) is not None,
        "rfc3339": _valid_rfc3339,
        "sha256": lambda s: _SHA256_RE.fullmatch(s) is not None,
        "path": lambda s: s.startswith("/") and "\x00" not in s,
        "base64": _valid_base64,
    }
    return checks[t](value)


def embedded_value(ptype: str | None, text: str) -> JSON | None:
    """The value an embedded group binds, or None when the text fails its type."""
    t = ptype or "string"
    if t == "int":
        try:
            return int(text)
        except ValueError:
            return None
    return text if type_matches(t, text) else None


def substitute(value: JSON, host: Mapping[str, str], bindings: Mapping[str, JSON]) -> JSON:
    """Replace placeholders in a value to be sent ([TX-PH-05]).

    Raises:
        PlaceholderError: an unbound or wildcard name, an unknown host name, or an
            embedded use of a value that is neither a string nor an integer.
    """
    if isinstance(value, list):
        return [substitute(v, host, bindings) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, host, bindings) for k, v in value.items()}
    if not isinstance(value, str):
        return value
    template = parse(value)
    whole = template.whole
    if whole is not None:
        return _lookup(whole, host, bindings)
    out: list[str] = []
    for part in template.parts:
        if isinstance(part, str):
            out.append(part)
            continue
        found = _lookup(part, host, bindings)
        if isinstance(found, str):
            out.append(found)
        elif _is_int(found):
            out.append(str(found))
        else:
            raise PlaceholderError(f"{part.text()} is bound to a value that cannot be embedded")
    return "".join(out)


def _lookup(ph: Placeholder, host: Mapping[str, str], bindings: Mapping[str, JSON]) -> JSON:
    if ph.is_wildcard:
        raise PlaceholderError("the wildcard ${_} cannot be sent")
    if ph.is_host:
        if ph.name not in host:
            raise PlaceholderError(f"unknown runner-provided name {ph.text()}")
        return host[ph.name]
    if ph.name not in bindings:
        raise PlaceholderError(f"{ph.text()} is not bound yet")
    return bindings[ph.name]


def substitute_host_text(text: str, host: Mapping[str, str], escape: bool = False) -> str:
    """Replace upper-case placeholders in setup text ([TX-HEADER-07]).

    With ``escape`` the value is written as TOML basic-string content.

    Raises:
        PlaceholderError: a lower-case or unknown name, or a malformed placeholder.
    """
    out: list[str] = []
    for part in parse(text).parts:
        if isinstance(part, str):
            out.append(part)
            continue
        if not part.is_host:
            raise PlaceholderError(f"{part.text()}: only runner-provided names may appear in setup")
        if part.name not in host:
            raise PlaceholderError(f"unknown runner-provided name {part.text()}")
        out.append(toml_escape(host[part.name]) if escape else host[part.name])
    return "".join(out)


def toml_escape(text: str) -> str:
    """Escape text for the inside of a TOML basic string."""
    out: list[str] = []
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)
