"""JSON value aliases and the one strict codec used for every wire and store encoding.

Design: `dumps` is compact, UTF-8 (non-ASCII unescaped, ACP-TR-10) and refuses NaN and
infinities, because no peer of ours accepts them; `loads` refuses them too, including a number
literal too large for a float (`1e400`), which Python would otherwise turn into an infinity
that no reply could carry back (acp.md ACP-TR-12). `Any` is allowed only in this module
(DESIGN §14): it is the boundary where untyped `json` output is narrowed.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final, TypeAlias

JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"
JSONObject: TypeAlias = "dict[str, JSON]"


def _reject_constant(name: str) -> Any:  # noqa: ANN401 - json.loads hook signature
    raise ValueError(f"non-standard JSON literal {name}")


# Design: a quoted literal longer than this is cut in the error text (a hostile line may carry
# a number of megabytes).
_SHOWN_LITERAL = 32


def _finite_float(literal: str) -> float:
    value = float(literal)
    if value in (math.inf, -math.inf):
        shown = literal if len(literal) <= _SHOWN_LITERAL else literal[:_SHOWN_LITERAL] + "…"
        raise ValueError(f"number out of range: {shown}")
    return value


# Design: one encoder and one decoder for the process; building them per call showed up in
# the prompt round trip (bench/acp_prompt_rtt). Both are stateless and thread-safe.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)

# A lone surrogate: a Python str holds one when a client sent a `"\\udfff"` escape, but UTF-8 has
# no form for it, so the wire, the store and every HTTP body would fail to encode it.
_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape_surrogates(text: str) -> str:
    """Replace every lone surrogate of a JSON text by its `\\uXXXX` escape.

    Only a JSON string can hold such a character (the JSON outside strings is ASCII), and the
    escape decodes to the very same string, so a value echoed back stays unchanged (acp.md
    ACP-TR-15) while the text becomes valid UTF-8 (ACP-TR-06).
    """
    if text.isascii():  # Design: the common case costs one C-level scan
        return text
    return _SURROGATE.sub(_escape_surrogate, text)


def loads(text: str | bytes) -> JSON:
    """Parse one JSON text strictly (no NaN/Infinity, no number that overflows a float).

    Raises:
        ValueError (json.JSONDecodeError is a subclass) on malformed input.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    value: JSON = _DECODER.decode(text)
    return value


def dumps(value: object) -> str:
    """Serialise compactly, keeping insertion order and non-ASCII characters; a lone
    surrogate, which has no UTF-8 form, is the one character written escaped."""
    return escape_surrogates(_ENCODER.encode(value))


def as_object(value: JSON) -> JSONObject | None:
    """Return the value when it is a JSON object, else None."""
    return value if isinstance(value, dict) else None
