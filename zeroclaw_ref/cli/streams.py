"""The standard streams a command writes to, as one value (real ones, or test doubles).

Its own module so that `config_cmd` and the curses editor `config_edit` both use it without
importing each other (the editor is started by `config_cmd`, never the other way round).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TextIO


@dataclass(frozen=True, slots=True)
class Streams:
    """The standard streams the command uses."""

    stdin: TextIO
    stdout: TextIO
    stderr: TextIO
