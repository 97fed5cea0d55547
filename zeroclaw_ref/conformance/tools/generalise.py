"""Turning an actual message into an expected value for ``record`` (transcripts.md §11).

Design: ``Generaliser.value`` walks the actual message once, carrying the old
expected value at the same pointer when there is one, and decides at each
place, in the order [TX-RECORD-02] fixes:

1. an old placeholder (whole or embedded) that the actual value still
   satisfies is kept, except a wildcard that stands for a whole message or a
   whole ``params``, ``result`` or ``error``: that is a scaffold slot;
2. a header mask whose pointer pattern covers the place is written, provided
   the actual value satisfies it;
3. a string equal to a runner-provided path, or starting with one and ``/``,
   gets that part written as the upper-case placeholder (longest value first);
4. a string of at least 8 characters equal to a bound value is written as the
   binding's name.

Between steps 2 and 3 an old literal that still equals the actual value is
kept as written: an author who pinned a value keeps it, so a reviewed golden
that the agent still satisfies comes back unchanged.

Everything else is the actual value, with ``${`` escaped as ``$${`` so that a
literal never reads as a placeholder ([TX-PH-01]). Members the matcher would
not compare (an unpinned ``_meta``, header ``ignore`` pointers) are left out,
because an expected member at an ignored pointer is a transcript error
([TX-MATCH-06], [TX-MATCH-07]).

Names bound while walking go into ``bindings`` in document order, as the
matcher binds them ([TX-PH-03]); callers give a scratch copy and verify the
result with ``match`` afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..core.jsonlex import JSON, escape_pointer_token, strict_equal, string_values
from ..core.match import MatchContext, is_ignored, match, split_pointer
from ..core.placeholders import PlaceholderError, Template, parse

# [TX-PH-10] places where a wildcard may stand only in an unrecorded scaffold
SCAFFOLD_SPOTS = ((), ("params",), ("result",), ("error",))
# [TX-RECORD-02] step 4 applies to strings of at least this many characters
MIN_BOUND_TEXT = 8
# ids and instants the agent generates: fixed only under ZEROCLAW_REF_DETERMINISTIC=1
_GENERATED = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"|\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}"
)


class _Missing:
    """No old value at this pointer (a scaffold, or a member the old value lacked)."""


MISSING = _Missing()
Old = JSON | _Missing


class MaskError(ValueError):
    """A ``record.masks`` entry that cannot be used."""


@dataclass(frozen=True, slots=True)
class Mask:
    """A header mask: a pointer pattern (``*`` = any one token) and the text to write there."""

    pattern: tuple[str, ...]
    placeholder: str


def read_masks(record: JSON) -> tuple[Mask, ...]:
    """The masks of a header's ``record`` member ([TX-RECORD-02] step 2).

    Raises:
        MaskError: ``masks`` is not a list of ``{"pointer", "placeholder"}`` objects
            with a JSON Pointer pattern and a string holding a placeholder.
    """
    masks = record.get("masks", []) if isinstance(record, dict) else []
    if not isinstance(masks, list):
        raise MaskError("record.masks must be an array")
    out: list[Mask] = []
    for number, item in enumerate(masks, 1):
        if not isinstance(item, dict) or set(item) != {"pointer", "placeholder"}:
            raise MaskError(f"mask {number} must have exactly pointer and placeholder")
        pointer, text = item["pointer"], item["placeholder"]
        if not isinstance(pointer, str) or (pointer and not pointer.startswith("/")):
            raise MaskError(f"mask {number}: pointer must be a JSON Pointer")
        if not isinstance(text, str):
            raise MaskError(f"mask {number}: placeholder must be a string")
        try:
            template = parse(text)
        except PlaceholderError as exc:
            raise MaskError(f"mask {number}: {exc}") from None
        if not template.placeholders:
            raise MaskError(f"mask {number}: {text!r} holds no placeholder")
        out.append(Mask(split_pointer(pointer), text))
    return tuple(out)


def escape_literal(text: str) -> str:
    """Write text so that ``parse`` reads it back unchanged ([TX-PH-01] ``$${``)."""
    return text.replace("${", "$${")


def _template(text: str) -> Template | None:
    try:
        return parse(text)
    except PlaceholderError:
        return None


@dataclass(slots=True)
class Generaliser:
    """Generalises the messages of one frame; ``warnings`` collects what needs a human."""

    host: Mapping[str, str]
    bindings: dict[str, JSON]
    masks: Sequence[Mask] = ()
    ignore: Sequence[tuple[str, ...]] = ()
    warnings: list[str] = field(default_factory=list)

    def value(self, old: Old, actual: JSON) -> JSON:
        """The expected value to write for ``actual``, given the old one (or ``MISSING``)."""
        return self._walk(old, actual, ())

    def example(self, new: JSON, actual: JSON) -> JSON:
        """The actual message as an ``example`` member ([TX-RECORD-03]).

        Objects keep the members of the recorded value ``new``, so the example
        matches its own frame; below a placeholder the actual value is copied
        whole. Runner-provided paths are written as placeholder text: their
        values change every run, and ``serve`` takes them from the client.
        """
        if isinstance(actual, dict):
            if isinstance(new, dict):
                return {k: self.example(new[k], actual[k]) for k in new if k in actual}
            return {k: self.example(None, v) for k, v in actual.items()}
        if isinstance(actual, list):
            news = new if isinstance(new, list) else []
            return [
                self.example(news[i] if i < len(news) else None, v) for i, v in enumerate(actual)
            ]
        if isinstance(actual, str):
            replaced = self._host_prefix(actual, escape=False)
            return actual if replaced is None else replaced
        return actual

    # -- the walk ----------------------------------------------------------

    def _walk(self, old: Old, actual: JSON, at: tuple[str, ...]) -> JSON:
        same_literal: str | None = None
        if isinstance(old, str) and (template := _template(old)) is not None:
            if template.literal is None:
                if self._placeholder_fits(template, old, actual, at):
                    return old  # step 1
            elif template.literal == actual:
                same_literal = old
        for mask in self.masks:
            if _covers(mask.pattern, at):
                if self._fits(mask.placeholder, actual):
                    return mask.placeholder  # step 2
                self.warnings.append(
                    f"mask {mask.placeholder} does not fit the value at {_pointer(at) or '(root)'}"
                )
        if same_literal is not None:
            return same_literal  # the author's literal, in the author's spelling
        if isinstance(actual, dict):
            return self._object(old, actual, at)
        if isinstance(actual, list):
            olds = old if isinstance(old, list) else []
            return [
                self._walk(olds[i] if i < len(olds) else MISSING, item, (*at, str(i)))
                for i, item in enumerate(actual)
            ]
        if isinstance(actual, str):
            return self._string(actual, at)
        if not isinstance(old, _Missing | str) and strict_equal(old, actual):
            return old  # keeps the author's lexical form, such as 1.50
        return actual

    def _placeholder_fits(
        self, template: Template, old: str, actual: JSON, at: tuple[str, ...]
    ) -> bool:
        whole = template.whole
        if whole is not None and whole.is_wildcard and at in SCAFFOLD_SPOTS:
            return False  # a scaffold slot is always filled in
        return self._fits(old, actual)

    def _fits(self, expected: str, actual: JSON) -> bool:
        """Match a placeholder string on a scratch context; keep its bindings on success."""
        trial = MatchContext(self.host, dict(self.bindings))
        try:
            miss = match(expected, actual, trial)
        except PlaceholderError:
            return False
        if miss is not None:
            return False
        self.bindings.update(trial.bindings)
        return True

    def _object(self, old: Old, actual: dict[str, JSON], at: tuple[str, ...]) -> JSON:
        olds = old if isinstance(old, dict) else {}
        keys = self._kept_keys(olds, actual, at)
        return {k: self._walk(olds.get(k, MISSING), actual[k], (*at, k)) for k in keys}

    def _kept_keys(
        self, olds: Mapping[str, JSON], actual: Mapping[str, JSON], at: tuple[str, ...]
    ) -> list[str]:
        """Compared members: the old value's order first, then new ones in arrival order."""
        keys = [
            k
            for k in actual
            if (k != "_meta" or "_meta" in olds) and not is_ignored((*at, k), self.ignore)
        ]
        return [k for k in olds if k in keys] + [k for k in keys if k not in olds]

    def _string(self, text: str, at: tuple[str, ...]) -> str:
        replaced = self._host_prefix(text)
        if replaced is not None:
            return replaced  # step 3
        if len(text) >= MIN_BOUND_TEXT:
            for name, bound in self.bindings.items():
                if isinstance(bound, str) and bound == text:
                    return "${" + name + "}"  # step 4
        where = _pointer(at) or "(root)"
        for name, value in self.host.items():
            if value in text:
                self.warnings.append(
                    f"the string at {where} contains the value of ${{{name}}},"
                    " which changes between runs; generalise it by hand"
                )
                break
        if _GENERATED.search(text):
            self.warnings.append(
                f"the string at {where} pins a generated id or time, stable only in"
                " deterministic mode; bind it or add a record mask"
            )
        return escape_literal(text)

    def _host_prefix(self, text: str, escape: bool = True) -> str | None:
        for name, value in _paths(self.host):
            if text == value:
                return "${" + name + "}"
            if text.startswith(value + "/"):
                rest = text[len(value) :]
                return "${" + name + "}" + (escape_literal(rest) if escape else rest)
        return None


def _paths(host: Mapping[str, str]) -> list[tuple[str, str]]:
    """Runner-provided names whose values are paths, longest value first."""
    found = [(n, v) for n, v in host.items() if v.startswith("/") and len(v) > 1]
    return sorted(found, key=lambda item: len(item[1]), reverse=True)


def _covers(pattern: tuple[str, ...], at: tuple[str, ...]) -> bool:
    return len(pattern) == len(at) and all(p in ("*", t) for p, t in zip(pattern, at, strict=True))


def _pointer(at: tuple[str, ...]) -> str:
    return "".join("/" + escape_pointer_token(t) for t in at)


def any_typed(value: JSON, types: dict[str, str | None]) -> bool:
    """Whether a recorded value still holds an ``any``-typed placeholder ([TX-RECORD-03]).

    ``types`` maps each lower-case name to the type of its first occurrence and
    is updated in document order, so later frames see earlier bindings
    ([TX-PH-08]). A whole-value ``${_}``, ``${_:any}`` or name whose first type is
    none or ``any`` counts; embedded placeholders are strings at least.
    """
    found = False
    for _pointer, text in string_values(value):
        template = _template(text)
        if template is None:
            continue
        whole = template.whole
        for ph in template.placeholders:
            if ph.is_host:
                continue
            effective = ph.type
            if ph.is_binding:
                default = ph.type if whole is not None else (ph.type or "string")
                effective = types.setdefault(ph.name, default)
            if whole is not None and effective in (None, "any"):
                found = True
    return found
