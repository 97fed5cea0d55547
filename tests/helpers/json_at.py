"""Typed reads of decoded JSON in tests: `at(value, "result", "content", 0, "text")` walks a
path and fails the test naming the step that is missing or of the wrong kind, so assertions
need neither `type: ignore[index]` nor unchecked casts.

`at` returns `object` (compare it, or walk further); the typed forms (`text_at`, `int_at`,
`obj_at`, `list_at`) check the kind of the value they return.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

Step = str | int


def at(value: object, *path: Step) -> object:
    """The value at `path` inside `value`: a str step indexes an object, an int a list."""
    current = value
    for depth, step in enumerate(path):
        where = path[: depth + 1]
        if isinstance(step, str):
            assert isinstance(current, Mapping), f"{where}: not an object: {current!r:.200}"
            assert step in current, f"{where}: missing in {current!r:.200}"
            current = current[step]
        else:
            assert isinstance(current, Sequence) and not isinstance(current, str), (
                f"{where}: not a list: {current!r:.200}"
            )
            assert -len(current) <= step < len(current), f"{where}: out of range"
            current = current[step]
    return current


def text_at(value: object, *path: Step) -> str:
    found = at(value, *path)
    assert isinstance(found, str), f"{path}: not a string: {found!r:.200}"
    return found


def int_at(value: object, *path: Step) -> int:
    found = at(value, *path)
    assert isinstance(found, int) and not isinstance(found, bool), f"{path}: not an int: {found!r}"
    return found


def obj_at(value: object, *path: Step) -> dict[str, object]:
    found = at(value, *path)
    assert isinstance(found, dict), f"{path}: not an object: {found!r:.200}"
    return found


def list_at(value: object, *path: Step) -> list[object]:
    found = at(value, *path)
    assert isinstance(found, list), f"{path}: not a list: {found!r:.200}"
    return found


def objects_at(value: object, *path: Step) -> list[dict[str, object]]:
    """A list of objects at `path` (every item checked)."""
    items = list_at(value, *path)
    for i, item in enumerate(items):
        assert isinstance(item, dict), f"{path}[{i}]: not an object: {item!r:.200}"
    return [item for item in items if isinstance(item, dict)]
