"""Where the corpus is, when the command line does not say ([TX-CORPUS-01], [TX-CORPUS-02]).

The corpus ships twice: as ``fixtures/`` in a checkout of the repository, and
as package data of the wheel, ``zeroclaw_ref/conformance/corpus/`` (setup.cfg
maps that package to ``fixtures/``). A checkout wins, so an editable install
reads the files being edited; a copied-out runner falls back to ``./fixtures``.
Positional arguments that are not paths are read as scenario ids or areas
inside the corpus, so ``run acp/base-transport`` works from any directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS_MARKERS = ("VERSION", "spec-index.json")


def is_corpus(path: Path) -> bool:
    return all((path / name).is_file() for name in CORPUS_MARKERS)


def default_fixtures() -> Path:
    """The repository checkout's fixtures/, else the installed corpus, else ./fixtures."""
    checkout = HERE.parents[1] / "fixtures"
    if is_corpus(checkout) and (HERE.parents[1] / "setup.cfg").is_file():
        return checkout
    installed = HERE / "corpus"
    if is_corpus(installed):
        return installed
    return Path("fixtures")


def fixtures_for(paths: Sequence[Path], given: Path | None) -> Path:
    """``--fixtures`` when given; else the corpus that holds the first path; else the default."""
    if given is not None:
        return given
    if paths and paths[0].exists():
        for parent in paths[0].resolve().parents:
            if (parent / "VERSION").is_file():
                return parent
    return default_fixtures()


def resolve_selection(paths: Sequence[Path], fixtures: Path) -> list[Path]:
    """Paths as given when they exist; otherwise ids or areas under the corpus."""
    out: list[Path] = []
    for item in paths:
        if item.exists() or item.is_absolute():
            out.append(item)
            continue
        name = item.as_posix().removesuffix(".jsonl")
        candidates = [fixtures / name, fixtures / f"{name}.jsonl"]
        out.append(next((c for c in candidates if c.exists()), item))
    return out
