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


def loads(text: str | bytes) -> JSON:
    """Parse one JSON text strictly (no NaN/Infinity).

    Raises:
        ValueError (json.JSONDecodeError is a subclass) on malformed input.
    """
    value: JSON = json.loads(text, parse_constant=_reject_constant)
    return value


def dumps(value: object) -> str:
    """Serialise compactly, keeping insertion order and non-ASCII characters."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def as_object(value: JSON) -> JSONObject | None:
    """Return the value when it is a JSON object, else None."""
    return value if isinstance(value, dict) else None
