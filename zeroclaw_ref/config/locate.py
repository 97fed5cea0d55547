"""Find the 1-based line of a key path in TOML text, for schema errors (CFG-LOAD-06).

`tomllib` reports no positions for valid documents, so this module scans the text once and
records where every header and key starts. Paths use the loader's spelling: dotted keys, and
`[<i>]` for the entries of arrays of tables and arrays (`mcp.servers[0].name`).

Design: the text has already been parsed by `tomllib`, so the scanner may assume valid TOML and
only needs to skip strings, comments and values correctly. Any surprise stops the scan; lines
not found fall back to the nearest recorded ancestor, else none (CFG-LOAD-06 allows omitting it).
"""

from __future__ import annotations

import contextlib
import tomllib

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.lines: dict[str, int] = {}
        self.array_counts: dict[str, int] = {}

    @property
    def line(self) -> int:
        return self.text.count("\n", 0, self.pos) + 1

    def peek(self, n: int = 1) -> str:
        return self.text[self.pos : self.pos + n]

    def skip_space(self, newlines: bool) -> None:
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch in " \t\r" or (newlines and ch == "\n"):
                self.pos += 1
            elif ch == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            else:
                return

    def record(self, path: str) -> None:
        self.lines.setdefault(path, self.line)

    def run(self) -> None:
        current = ""
        while True:
            self.skip_space(newlines=True)
            if self.pos >= len(self.text):
                return
            if self.peek() == "[":
                current = self.header()
            else:
                path = self.key_path(current)
                self.record(path)
                self.skip_space(newlines=False)
                self.expect("=")
                self.value(path)

    def header(self) -> str:
        is_array = self.peek(2) == "[["
        self.pos += 2 if is_array else 1
        self.skip_space(newlines=False)
        resolved = ""
        keys = self.keys()
        for j, key in enumerate(keys):
            resolved = f"{resolved}.{key}" if resolved else key
            count = self.array_counts.get(resolved)
            # An enclosing array of tables means its latest entry.
            if count is not None and j < len(keys) - 1:
                resolved = f"{resolved}[{count - 1}]"
        if is_array:
            index = self.array_counts.get(resolved, 0)
            self.array_counts[resolved] = index + 1
            self.lines.setdefault(resolved, self.line)
            resolved = f"{resolved}[{index}]"
        self.expect("]]" if is_array else "]")
        self.record(resolved)
        return resolved

    def keys(self) -> list[str]:
        keys = [self.simple_key()]
        while True:
            self.skip_space(newlines=False)
            if self.peek() != ".":
                return keys
            self.pos += 1
            self.skip_space(newlines=False)
            keys.append(self.simple_key())

    def key_path(self, prefix: str) -> str:
        path = prefix
        for key in self.keys():
            path = f"{path}.{key}" if path else key
            self.record(path)
        return path

    def simple_key(self) -> str:
        ch = self.peek()
        if ch in ('"', "'"):
            start = self.pos
            self.string()
            decoded = tomllib.loads(f"k = {self.text[start : self.pos]}")["k"]
            return str(decoded)
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in _BARE:
            self.pos += 1
        if self.pos == start:
            raise ValueError("key expected")
        return self.text[start : self.pos]

    def expect(self, token: str) -> None:
        if self.peek(len(token)) != token:
            raise ValueError(f"{token!r} expected")
        self.pos += len(token)

    def string(self) -> None:
        quote = self.peek()
        triple = self.peek(3) == quote * 3
        delim = quote * 3 if triple else quote
        self.pos += len(delim)
        while self.pos < len(self.text):
            if quote == '"' and self.peek() == "\\":
                self.pos += 2
                continue
            if self.peek(len(delim)) == delim:
                self.pos += len(delim)
                # A multi-line string may end with up to two extra quotes.
                while triple and self.peek() == quote:
                    self.pos += 1
                return
            self.pos += 1
        raise ValueError("unterminated string")

    def value(self, path: str) -> None:
        self.skip_space(newlines=False)
        ch = self.peek()
        if ch in ('"', "'"):
            self.string()
        elif ch == "[":
            self.array(path)
        elif ch == "{":
            self.inline_table(path)
        else:
            while self.pos < len(self.text) and self.text[self.pos] not in ",]}\n#":
                self.pos += 1

    def array(self, path: str) -> None:
        self.pos += 1
        index = 0
        while True:
            self.skip_space(newlines=True)
            if self.peek() == "]":
                self.pos += 1
                return
            item = f"{path}[{index}]"
            self.record(item)
            self.value(item)
            index += 1
            self.skip_space(newlines=True)
            if self.peek() == ",":
                self.pos += 1

    def inline_table(self, path: str) -> None:
        self.pos += 1
        while True:
            self.skip_space(newlines=True)
            if self.peek() == "}":
                self.pos += 1
                return
            key = self.key_path(path)
            self.skip_space(newlines=False)
            self.expect("=")
            self.value(key)
            self.skip_space(newlines=True)
            if self.peek() == ",":
                self.pos += 1


def locate_lines(text: str) -> dict[str, int]:
    """Map each key path found in `text` to the line where it first appears."""
    scanner = _Scanner(text)
    # Design: a partial map still locates everything before a surprise.
    with contextlib.suppress(ValueError, tomllib.TOMLDecodeError):
        scanner.run()
    return scanner.lines


def line_of(lines: dict[str, int], path: str) -> int | None:
    """The line of `path`, else of its nearest recorded ancestor (its table header), else None."""
    while path:
        if path in lines:
            return lines[path]
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return None
