"""JSON value aliases and the one strict codec used for every wire and store encoding.

Design: `dumps` is compact, UTF-8 (non-ASCII unescaped, ACP-TR-10) and refuses NaN and
infinities, because no peer of ours accepts them; `loads` refuses them too. `Any` is allowed
only in this module (DESIGN §14): it is the boundary where untyped `json` output is narrowed.
"""

from __future__ import annotations

import json
from typing import Any, TypeAlias

JSON: TypeAlias = "bool | int | float | str | list[JSON] | dict[str, JSON] | None"
JSONObject: TypeAlias = "dict[str, JSON]"


def _reject_constant(name: str) -> Any:  # noqa: ANN401 - json.loads hook signature
    raise ValueError(f"non-standard JSON literal {name}")


# Design: one encoder and one decoder for the process; building them per call showed up in
# the prompt round trip (bench/acp_prompt_rtt). Both are stateless and thread-safe.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def loads(text: str | bytes) -> JSON:
    """Parse one JSON text strictly (no NaN/Infinity).

    Raises:
        ValueError (json.JSONDecodeError is a subclass) on malformed input.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    value: JSON = _DECODER.decode(text)
    return value


def dumps(value: object) -> str:
    """Serialise compactly, keeping insertion order and non-ASCII characters."""
    return _ENCODER.encode(value)


def as_object(value: JSON) -> JSONObject | None:
    """Return the value when it is a JSON object, else None."""
    return value if isinstance(value, dict) else None
