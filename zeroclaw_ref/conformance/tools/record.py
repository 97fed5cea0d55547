"""The ``record`` command: drafting goldens from an agent for human review (transcripts.md §11).

Plan: each selected scenario is loaded and checked as ``run`` does, except
that unrecorded scaffolds (whole-message wildcards, [TX-PH-10]) and sends of
names a scaffold cannot bind yet are let through; a header with
``"record": {"enabled": false}`` is refused ([TX-RECORD-05]). ``_Recorder``
is the ordinary runner with ``ZEROCLAW_REF_DETERMINISTIC=1`` in the agent's
environment ([TX-RECORD-01]). Its ``expect`` and ``expect_unordered`` take as
many messages as ``run`` would, write each as a generalised expected value
(generalise.py, [TX-RECORD-02], [TX-RECORD-03]) and then match the new value,
so bindings and every later frame behave exactly as in ``run``. Any failure
(a timeout, a send of an unbound name, an exit status, a left-over message)
stops the scenario and leaves its file alone. The draft is then checked and
run once more, as ``run`` would run it, so that what is written passes.

Only the lines of recorded frames whose value or ``example`` changed are
serialised again, as compact JSON in their original member order; every other
line is copied byte for byte. Without ``--write`` the result is a unified diff
on stdout; with it, the files are rewritten ([TX-RECORD-04]) atomically, and
a scenario that is a symbolic link is refused rather than followed (see
``write_scenario``). Progress and errors go to stderr. [TX-RECORD-06] is a
process rule: no CI step or test runs ``record --write`` on the corpus itself.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import stat
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.checks import check_frames
from ..core.jsonlex import JSON, dumps, loads, strict_equal
from ..core.match import MatchContext, match, match_unordered, split_pointer
from ..core.placeholders import PlaceholderError
from ..core.report import Failed, failure
from ..core.runner import RunOptions, ScenarioRun
from ..core.suite import SelectionError, discover
from ..core.transcript import (
    Frame,
    Problem,
    Scenario,
    TranscriptError,
    display_path,
    frame_ignore,
    load,
)
from .generalise import Generaliser, Mask, MaskError, any_typed, read_masks

DETERMINISTIC = ("ZEROCLAW_REF_DETERMINISTIC", "1")
# Problems record may meet in a golden it is about to redraw: scaffold wildcards
# and stale examples on expected frames, sends of names not bound yet.
_EXPECT_RULES = frozenset({"TX-PH-10", "TX-LINT-01"})
_SEND_RULES = frozenset({"TX-PH-03"})


@dataclass(slots=True)
class Recorded:
    """The new value of one expected frame, and its ``example`` when it needs one."""

    value: JSON
    example: JSON = None
    has_example: bool = False


@dataclass(slots=True)
class Outcome:
    """What recording one scenario produced."""

    display: str
    sid: str
    old_text: str = ""
    new_text: str = ""
    error: str = ""
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return not self.error and self.new_text != self.old_text


class _Deterministic(ScenarioRun):
    """The runner, with the reference's deterministic ids and clock ([TX-RECORD-01])."""

    def _environment(self) -> dict[str, str]:
        env = super()._environment()
        env[DETERMINISTIC[0]] = DETERMINISTIC[1]
        return env


class _Recorder(_Deterministic):
    """The runner, with expected frames drafted from the messages instead of judged."""

    def __init__(self, sc: Scenario, options: RunOptions, masks: Sequence[Mask]) -> None:
        super().__init__(sc, options)
        self.masks = tuple(masks)
        self.recorded: dict[int, Recorded] = {}
        self.types: dict[str, str | None] = {}
        self.warnings: list[str] = []

    def _send(self, frame: Frame) -> None:
        try:
            super()._send(frame)
        except PlaceholderError as exc:
            raise self._unplaceable(frame, exc) from None

    def _send_raw(self, frame: Frame) -> None:
        try:
            super()._send_raw(frame)
        except PlaceholderError as exc:
            raise self._unplaceable(frame, exc) from None

    def _unplaceable(self, frame: Frame, exc: PlaceholderError) -> Failed:
        # [TX-RECORD-05] a send that needs a name no recorded frame has bound
        return failure("unbound-name", frame, f"cannot send: {exc}")

    def _take(self, frame: Frame, deadline: float) -> JSON:
        if frame.ch == "acp":
            return self._next_acp(frame, deadline).value
        return self._next_peer(frame, deadline)

    def _generaliser(self, frame: Frame | None = None) -> Generaliser:
        # [TX-MATCH-07] an expect frame's own patterns are left out of its draft too
        own = (frame_ignore(frame) or ()) if frame is not None else ()
        ignore = [split_pointer(p) for p in (*self.sc.ignore, *own)]
        return Generaliser(self.host, dict(self.bindings), self.masks, ignore)

    def _expect(self, frame: Frame) -> None:
        # [TX-RECORD-01] one message, as run takes it; a "${_}" scaffold too
        actual = self._take(frame, self._deadline(frame, self.sc.timeout_expect))
        gen = self._generaliser(frame)
        new = gen.value(frame.value, actual)
        self._note(frame, gen)
        miss = match(new, actual, self._ctx(frame))
        if miss is not None:
            raise failure(
                "mismatch",
                frame,
                f"the drafted value does not match its message ({miss.reason} at"
                f" {miss.pointer or '(root)'}); check the masks and placeholders",
                mismatch=miss,
                expected=new,
                actual=actual,
                has_messages=True,
            )
        recorded = Recorded(new)
        # [TX-RECORD-03] a frame that still says "anything here" carries a concrete instance;
        # an example the new value no longer fits is redrawn as well
        stale = "example" in frame.mods and not _example_fits(new, frame.mods["example"])
        if any_typed(new, self.types) or stale:
            recorded.example, recorded.has_example = gen.example(new, actual), True
        self.recorded[frame.line] = recorded

    def _expect_unordered(self, frame: Frame) -> None:
        olds = frame.value if isinstance(frame.value, list) else []
        deadline = self._deadline(frame, self.sc.timeout_expect)
        actual = [self._take(frame, deadline) for _ in olds]
        order = self._pairing(olds, actual)
        gen = self._generaliser()
        new: list[JSON] = [gen.value(old, actual[j]) for old, j in zip(olds, order, strict=True)]
        self._note(frame, gen)
        result = match_unordered(new, actual, self._ctx())
        if not result.complete:
            raise failure(
                "mismatch",
                frame,
                "the drafted values match no assignment of the messages",
                mismatch=result.mismatch,
                expected=new,
                actual=actual,
                has_messages=True,
            )
        any_typed(new, self.types)  # keeps first-use types in file order
        self.recorded[frame.line] = Recorded(new)

    def _pairing(self, olds: list[JSON], actual: list[JSON]) -> list[int]:
        """Which message each old value is redrawn from.

        A complete assignment of the old values ([TX-MATCH-09]) is used when one
        exists; otherwise each old value takes the first free message it still
        matches, and the rest are paired in arrival order.
        """
        trial = MatchContext(self.host, dict(self.bindings), self._ctx().ignore)
        try:
            result = match_unordered(olds, actual, trial)
        except PlaceholderError:
            result = None
        if result is not None and result.complete:
            return list(result.assignment)
        pairing: list[int | None] = [None] * len(olds)
        bindings = dict(self.bindings)
        for i, old in enumerate(olds):
            for j, message in enumerate(actual):
                if j in pairing:
                    continue
                ctx = MatchContext(self.host, dict(bindings), trial.ignore)
                try:
                    if match(old, message, ctx) is None:
                        pairing[i], bindings = j, ctx.bindings
                        break
                except PlaceholderError:
                    break
        free = iter(j for j in range(len(actual)) if j not in pairing)
        return [j if j is not None else next(free) for j in pairing]

    def _note(self, frame: Frame, gen: Generaliser) -> None:
        self.warnings += [f"{self.sc.display}:{frame.line}: {w}" for w in gen.warnings]


def _example_fits(value: JSON, example: JSON) -> bool:
    """Lint's own check of an ``example`` against its frame ([TX-LINT-01])."""
    try:
        ctx = MatchContext(host={}, bindings={}, lenient_host=True)
        return match(value, example, ctx) is None
    except PlaceholderError:
        return False


def _blocking(sc: Scenario) -> list[Problem]:
    """The problems of ``check_frames`` that record cannot get past."""
    verbs = {f.line: f.verb for f in sc.frames}
    kept: list[Problem] = []
    for p in check_frames(sc):
        verb = verbs.get(p.line, "")
        if verb in ("expect", "expect_unordered") and p.rule in _EXPECT_RULES:
            continue
        if verb in ("send", "send_raw") and p.rule in _SEND_RULES:
            continue  # stopped at run time, when the send is reached ([TX-RECORD-05])
        kept.append(p)
    return kept


def record_scenario(path: Path, fixtures: Path, options: RunOptions) -> Outcome:
    """Run one scenario and draft its file anew; the file itself is not touched."""
    display = display_path(path, fixtures)
    out = Outcome(display, display)
    # The file is read once: the frames' line numbers and the text rewritten come
    # from the same bytes, so an edit made during the run cannot shift the lines.
    try:
        data = path.read_bytes()
    except OSError as exc:
        out.error = f"{display}:1: TX-FORMAT-02: cannot read file: {exc.strerror}"
        return out
    try:
        sc = load(path, fixtures, data)
    except TranscriptError as exc:
        out.error = str(exc)
        return out
    out.sid = sc.id
    record = sc.header.get("record", {})
    if isinstance(record, dict) and record.get("enabled", True) is False:
        out.error = f"{display}:1: TX-RECORD-05: record is disabled (a hand-written golden)"
        return out
    try:
        masks = read_masks(record)
    except MaskError as exc:
        out.error = f"{display}:1: TX-RECORD-02: {exc}"
        return out
    problems = _blocking(sc)
    if problems:
        out.error = "\n".join(str(p) for p in problems)
        return out
    recorder = _Recorder(sc, options, masks)
    result = recorder.execute()
    out.warnings = recorder.warnings
    if result.status != "pass":
        out.error = result.report or f"{display}: {result.status}"
        return out
    old_text = data.decode("utf-8")  # load accepted it, so it is UTF-8 (TX-FORMAT-02)
    new_text = redraw(old_text, sc, recorder.recorded)
    out.error = _check_draft(sc, new_text, options)
    if not out.error:
        out.old_text, out.new_text = old_text, new_text
    return out


def _check_draft(sc: Scenario, text: str, options: RunOptions) -> str:
    """Run the draft as ``run`` would (in deterministic mode): what is written must pass.

    This also applies what the recorder itself does not judge, such as the
    request headers an HTTP frame lists ([TX-PEER-08]).
    """
    lines = text.split("\n")
    frames: list[Frame] = []
    for frame in sc.frames:
        obj = loads(lines[frame.line - 1])
        assert isinstance(obj, dict)
        mods = {k: v for k, v in obj.items() if k != frame.verb}
        frames.append(dataclasses.replace(frame, value=obj[frame.verb], mods=mods))
    draft = dataclasses.replace(sc, frames=tuple(frames))
    problems = check_frames(draft)
    if problems:
        return "the draft does not lint:\n" + "\n".join(str(p) for p in problems)
    result = _Deterministic(draft, options).execute()
    if result.status != "pass":
        return "the draft does not pass run:\n" + result.report
    return ""


def redraw(text: str, sc: Scenario, recorded: dict[int, Recorded]) -> str:
    """The file with recorded frames written anew; other lines stay byte for byte."""
    lines = text.split("\n")
    frames = {f.line: f for f in sc.frames}
    for number, new in recorded.items():
        frame = frames[number]
        obj = loads(lines[number - 1])
        assert isinstance(obj, dict)
        if strict_equal(obj[frame.verb], new.value) and (
            not new.has_example or strict_equal(obj.get("example"), new.example)
        ):
            continue
        obj[frame.verb] = new.value
        if new.has_example:
            obj["example"] = new.example
        lines[number - 1] = dumps(obj)
    return "\n".join(lines)


def unified_diff(outcome: Outcome) -> str:
    """The change as a patch that ``git apply`` takes from the corpus' parent directory."""
    return "".join(
        difflib.unified_diff(
            outcome.old_text.splitlines(keepends=True),
            outcome.new_text.splitlines(keepends=True),
            fromfile=f"a/{outcome.display}",
            tofile=f"b/{outcome.display}",
        )
    )


class RecordWriteError(Exception):
    """A drafted file that ``--write`` refuses to put in place."""


def write_scenario(path: Path, old_text: str, new_text: str) -> None:
    """[TX-RECORD-04] replace the scenario file by its draft, atomically.

    The draft goes to a temporary file in the same directory, which then
    replaces the scenario with ``os.replace``: an interrupted or failed write
    (Ctrl-C, a full disk) leaves the old golden whole and removes the
    temporary. A symbolic link is refused, not followed and not replaced: the
    scenario was read through it, so its target (possibly shared, or outside
    the selection) would otherwise change, or the link would silently turn
    into a copy. Rewrite the target itself. A file that changed since it was
    read (edited during the run) is refused too, so that edit is not lost.
    ``os.replace`` renames over the final path component without following it,
    so even a link made after these checks is replaced, never written through.

    Raises:
        RecordWriteError: the file is a symbolic link, is not a regular file,
            or no longer holds ``old_text``.
        OSError: the temporary could not be written or moved into place.
    """
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise RecordWriteError("it is a symbolic link; record the file it points to instead")
    if not stat.S_ISREG(info.st_mode):
        raise RecordWriteError("it is not a regular file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise RecordWriteError(f"cannot read it again: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        current = handle.read()
    if current != old_text.encode("utf-8"):
        raise RecordWriteError("it changed while it was being recorded; record it again")
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    temporary = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
            handle.write(new_text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        temporary.replace(path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def run_record(
    fixtures: Path, paths: Sequence[Path], options: RunOptions, write: bool = False
) -> int:
    """[TX-RECORD-04] 0 nothing changed, 1 something changed, 2 on any error."""
    if options.timeout_scale <= 0:
        sys.stderr.write("error: --timeout-scale must be > 0\n")
        return 2
    try:
        files = discover(fixtures, paths)
    except SelectionError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    errors = changed = 0
    for path in files:
        outcome = record_scenario(path, fixtures, options)
        for warning in outcome.warnings:
            sys.stderr.write(f"WARNING {warning}\n")
        if outcome.error:
            errors += 1
            sys.stderr.write(f"ERROR {outcome.sid}\n    " + outcome.error.replace("\n", "\n    "))
            sys.stderr.write("\n")
            continue
        if not outcome.changed:
            sys.stderr.write(f"UNCHANGED {outcome.sid}\n")
            continue
        changed += 1
        if write:
            try:
                write_scenario(path, outcome.old_text, outcome.new_text)
            except (RecordWriteError, OSError) as exc:
                errors += 1
                changed -= 1
                sys.stderr.write(
                    f"ERROR {outcome.sid}\n    {outcome.display}: not written: {exc}\n"
                )
                continue
            sys.stderr.write(f"WROTE {outcome.sid}\n")
        else:
            sys.stdout.write(unified_diff(outcome))
            sys.stderr.write(f"CHANGED {outcome.sid}\n")
    sys.stdout.flush()
    verb = "rewritten" if write else "would change"
    sys.stderr.write(f"record: {len(files)} scenarios: {changed} {verb}, {errors} errors\n")
    if errors:
        return 2
    return 1 if changed else 0
