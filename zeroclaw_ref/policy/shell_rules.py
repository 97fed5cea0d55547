"""The command policy of `shell`: what may be spawned, at which risk (policy.md §4.3).

Goals: decide POL-SHELL-02…08 on the text alone, as values, so every path that runs a command
(`shell`, skill tools) shares one table-tested rule set. Plan: one quote-aware lexer turns the
command into words and separators and notes every construct POL-SHELL-02 forbids; segments,
executables, argument patterns and risk are then read off the words. Caveats: the lexer follows
POSIX `sh` quoting; wherever a reading is ambiguous it errs towards refusing (marked `Design:`).
Filesystem questions of POL-SHELL-08 (does a name go through a link, what does a glob match)
are answered by callbacks the caller supplies, keeping this module free of I/O.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from zeroclaw_ref.policy.security import SecurityPolicy

NOT_ALLOWED = "Command not allowed by security policy: {command}"  # [POL-SHELL-02]
HIGH_BLOCKED = "Command blocked: high-risk command is disallowed by policy"  # [POL-SHELL-06]
APPROVAL = "Command requires explicit approval (approved=true): {risk}-risk operation"
READ_ONLY = "Security policy: read-only mode, cannot perform 'shell'"  # [POL-AUTO-06]
PATH_BLOCKED = "Path blocked by security policy: {token}"  # [POL-SHELL-08]

# [POL-SHELL-05] the risk table as data.
HIGH_RISK_EXECUTABLES: frozenset[str] = frozenset((
    "rm", "mkfs", "dd", "shutdown", "reboot", "halt", "poweroff", "sudo", "su", "chown", "chmod",
    "useradd", "userdel", "usermod", "passwd", "mount", "umount", "iptables", "ufw",
    "firewall-cmd", "curl", "wget", "nc", "ncat", "netcat", "scp", "ssh", "ftp", "telnet", "del",
    "rmdir", "format", "reg", "net", "runas", "icacls", "takeown", "powershell", "pwsh", "wmic",
    "sc", "netsh",
))  # fmt: skip
HIGH_RISK_FRAGMENTS: tuple[str, ...] = ("rm -rf /", "rm -fr /", ":(){:|:&};:")
_PACKAGE_VERBS = frozenset(("install", "add", "remove", "uninstall", "update", "publish"))
MEDIUM_RISK_VERBS: dict[str, frozenset[str]] = {
    "git": frozenset((
        "commit", "push", "reset", "clean", "rebase", "merge", "cherry-pick", "revert", "branch",
        "checkout", "switch", "tag",
    )),
    "npm": _PACKAGE_VERBS,
    "pnpm": _PACKAGE_VERBS,
    "yarn": _PACKAGE_VERBS,
    "cargo": frozenset(("add", "remove", "install", "clean", "publish")),
}  # fmt: skip
MEDIUM_RISK_EXECUTABLES: frozenset[str] = frozenset({"touch", "mkdir", "mv", "cp", "ln"})
RISKS: tuple[str, ...] = ("low", "medium", "high")

# Design: shell grammar words are not executables; skipping them keeps `{ rm x; }` and
# `if …; then rm x; fi` from hiding `rm` behind a word the allow-list never names.
_RESERVED = frozenset(
    ("{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time")
)
# Design: a wrapper runs its argument as a program, so that program is checked as well.
_WRAPPERS = frozenset(
    ("env", "exec", "command", "builtin", "nice", "nohup", "timeout", "xargs", "stdbuf", "setsid")
)
_SEPARATORS = frozenset({";", "&&", "||", "|", "\n", "(", ")"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_NAME_START = re.compile(r"[A-Za-z_]")
_DOUBLE_ESCAPABLE = frozenset('$`"\\\n')
_BRACE = re.compile(r"\{[^{}]*(,|\.\.)[^{}]*\}")


@dataclass(slots=True)
class Word:
    """A shell word: `text` unquoted; `bare` with quoted characters as NUL, to spot expansions."""

    text: str = ""
    bare: str = ""

    def add(self, char: str, quoted: bool) -> None:
        self.text += char
        self.bare += "\x00" if quoted else char


class Lexed:
    """A POSIX-quoting scan of a command into `items` (words and separators); `forbidden` notes
    that a construct POL-SHELL-02 refuses appeared."""

    def __init__(self, command: str) -> None:
        self.s = command
        self.i = 0
        self.items: list[Word | str] = []
        self.forbidden = False
        self.word: Word | None = None
        while self.i < len(self.s):
            self.step()
        self.flush()

    def peek(self, offset: int = 0) -> str:
        return self.s[self.i + offset : self.i + offset + 1]

    def flush(self) -> None:
        if self.word is not None:
            self.items.append(self.word)
            self.word = None

    def char(self, char: str, quoted: bool) -> None:
        self.word = self.word or Word()
        self.word.add(char, quoted)

    def step(self) -> None:
        c = self.peek()
        if c == "\\":
            nxt = self.peek(1)
            if nxt and nxt != "\n":
                self.char(nxt, True)
            self.i += 2
        elif c == "'":
            self.single_quoted()
        elif c == '"':
            self.double_quoted()
        elif c == "$":
            # [POL-SHELL-02] an unquoted `$NAME`; Design: `$'…'` and `$"…"` too, because
            # bash decodes `$'\x2e\x2e'` into a path no token check would see.
            if _NAME_START.match(self.peek(1)) or self.peek(1) in ("'", '"'):
                self.forbidden = True
            self.char(c, False)
            self.i += 1
        elif c in " \t\r":
            self.flush()
            self.i += 1
        elif c in ";\n()":
            self.separator(c, 1)
        elif c in "|&":
            doubled = self.peek(1) == c
            # [POL-SHELL-02] a single `&` backgrounds; `&&` chains
            self.forbidden = self.forbidden or (c == "&" and not doubled)
            self.separator(c * 2 if doubled else c, 2 if doubled else 1)
        elif c == ">":
            self.output_redirection()
        elif c == "<":
            self.input_redirection()
        else:
            self.char(c, False)
            self.i += 1

    def separator(self, text: str, width: int) -> None:
        self.flush()
        self.items.append(text)
        self.i += width

    def single_quoted(self) -> None:
        end = self.s.find("'", self.i + 1)
        end = len(self.s) if end < 0 else end
        for char in self.s[self.i + 1 : end]:
            self.char(char, True)
        self.word = self.word or Word()  # '' is still a word
        self.i = end + 1

    def double_quoted(self) -> None:
        self.i += 1
        self.word = self.word or Word()
        while self.i < len(self.s) and self.peek() != '"':
            c = self.peek()
            if c == "\\" and self.peek(1) in _DOUBLE_ESCAPABLE and self.peek(1):
                self.char(self.peek(1), True)
                self.i += 2
                continue
            if c == "$" and _NAME_START.match(self.peek(1)):
                # Design: the shell expands `"$HOME"`, so double quotes do not make it safe.
                self.forbidden = True
            self.char(c, True)
            self.i += 1
        self.i += 1

    def output_redirection(self) -> None:
        # [POL-SHELL-02] only `/dev/null` and descriptor merges (`2>&1`) may follow `>`.
        if self.word is not None and self.word.bare.isdigit():
            self.word = None  # the descriptor number belongs to the redirection
        self.flush()
        self.i += 1
        if self.peek() == ">":
            self.i += 1
        if self.peek() == "&":
            self.i += 1
            start = self.i
            while self.peek().isdigit():
                self.i += 1
            if self.i == start or self.peek() not in ("", " ", "\t", "\n", ";", "|", "&", ")", ">"):
                self.forbidden = True
            return
        if self.peek() in ("|", "("):
            self.forbidden = True
            return
        while self.peek() in (" ", "\t"):
            self.i += 1
        before = len(self.items)
        while self.i < len(self.s) and self.peek() not in " \t\r\n;&|()<>":
            self.step()
        self.flush()
        target = self.items[before:]
        if len(target) != 1 or not isinstance(target[0], Word) or target[0].text != "/dev/null":
            self.forbidden = True

    def input_redirection(self) -> None:
        # [POL-SHELL-02] heredocs (`<<`, `<<-`) and here-strings (`<<<`) are allowed.
        self.flush()
        if self.peek(1) == "<":
            self.i += 3 if self.peek(2) == "<" else 2
            if self.peek() == "-":
                self.i += 1
            return
        self.forbidden = True
        self.i += 1


def lex(command: str) -> Lexed:
    """Split `command` into words and separators, noting POL-SHELL-02 constructs."""
    lexed = Lexed(command)
    # [POL-SHELL-02] these are refused wherever they appear, quoted or not.
    if any(s in command for s in ("`", "$(", "${", "<(", ">(")):
        lexed.forbidden = True
    # [POL-SHELL-02] a `tee` word, also when spelt as a path or quoted.
    words = [item.text for item in lexed.items if isinstance(item, Word)]
    lexed.forbidden |= any(w == "tee" or w.endswith("/tee") for w in words)
    return lexed


def segments(command: str) -> list[list[str]]:
    """[POL-SHELL-03] the words of each segment between unquoted `;`, `&&`, `||`, `|`, newlines
    (and parentheses, which open subshells); empty segments are dropped."""
    found: list[list[str]] = [[]]
    for item in lex(command).items:
        if isinstance(item, Word):
            found[-1].append(item.text)
        elif item in _SEPARATORS or item == "&":
            found.append([])
    return [seg for seg in found if seg]


def _program(words: list[str]) -> list[str]:
    """The words from the executable on: assignments and grammar words skipped."""
    i = 0
    while i < len(words) and (_ASSIGNMENT.match(words[i]) or words[i] in _RESERVED):
        i += 1
    return words[i:]


def executable_name(word: str) -> str:
    """Basename, lower-cased, as POL-SHELL-03 compares it."""
    return word.replace("\\", "/").rsplit("/", 1)[-1].lower()


def programs(words: list[str]) -> list[list[str]]:
    """The segment's program, and the programs its wrappers (`env`, `xargs`, …) would run."""
    found: list[list[str]] = []
    rest = _program(words)
    while rest:
        found.append(rest)
        if executable_name(rest[0]) not in _WRAPPERS:
            break
        j = 1
        while j < len(rest) and (
            rest[j].startswith("-") or _ASSIGNMENT.match(rest[j]) or rest[j][:1].isdigit()
        ):
            j += 1
        rest = rest[j:]
    return found


# [POL-SHELL-04] (executable pattern, refused arguments, refused prefixes, refused letters in a
# single-dash cluster). Design: `-execdir`/`-okdir` act like `-exec`/`-ok`, `--config-env` like
# `-c`, and `python3 -Ic` is `-I -c`, so those spellings are refused as well.
_ARGUMENT_RULES: tuple[tuple[str, frozenset[str], tuple[str, ...], str], ...] = (
    ("find", frozenset(("-exec", "-ok", "-execdir", "-okdir")), (), ""),
    ("git", frozenset(("-c", "config", "alias")), ("config.", "alias.", "--config-env"), ""),
    (r"python[0-9.]*", frozenset(), ("-c", "-m"), "cm"),
    ("node", frozenset(), ("-e", "--eval", "-p", "--print"), "ep"),
    (r"pip[0-9.]*", frozenset(("install", "download")), (), ""),
    ("npm", frozenset(("exec", "install", "i", "add", "ci")), (), ""),
    ("cargo", frozenset(("install",)), (), ""),
)


def _argument_refused(name: str, args: list[str]) -> bool:
    """[POL-SHELL-04] argument patterns that turn an allowed program into arbitrary code."""
    for pattern, exact, prefixes, letters in _ARGUMENT_RULES:
        if re.fullmatch(pattern, name):
            return any(
                a in exact
                or a.startswith(prefixes)
                or bool(letters and re.fullmatch(r"-[a-z]+", a) and set(letters) & set(a))
                for a in (arg.lower() for arg in args)
            )
    return False


def structure_refused(command: str, security: SecurityPolicy) -> bool:
    """[POL-SHELL-02…04] True when the command must not run; the escape hatch (`*` allowed and
    high-risk blocking off) leaves only risk and paths to check."""
    if "*" in security.allowed_commands and not security.block_high_risk_commands:
        return False
    if lex(command).forbidden:
        return True
    allowed = {c.lower() for c in security.allowed_commands}
    for words in segments(command):
        for program in programs(words):
            name = executable_name(program[0])
            if ("*" not in allowed and name not in allowed) or _argument_refused(name, program[1:]):
                return True
    return False


def segment_risk(words: list[str]) -> str:
    """[POL-SHELL-05] the risk class of one segment."""
    risk = "low"
    for program in programs(words) or [[]]:
        name = executable_name(program[0]) if program else ""
        first = program[1].lower() if len(program) > 1 else ""
        if name in HIGH_RISK_EXECUTABLES:
            return "high"
        if name in MEDIUM_RISK_EXECUTABLES or first in MEDIUM_RISK_VERBS.get(name, ()):
            risk = "medium"
    return "high" if any(f in " ".join(words).lower() for f in HIGH_RISK_FRAGMENTS) else risk


def command_risk(command: str) -> str:
    """[POL-SHELL-05] the highest segment risk; the fragments are also searched in the whole
    command, since splitting on `|` and `;` would cut `:(){:|:&};:` apart."""
    if any(f in command.lower() for f in HIGH_RISK_FRAGMENTS):
        return "high"
    risks = [segment_risk(words) for words in segments(command)]
    return max(risks, key=RISKS.index, default="low")


def command_refusal(command: str, security: SecurityPolicy, approved: bool) -> str | None:
    """[POL-SHELL-01…07] the refusal text for `command`, or None when it may run (paths aside).

    `approved` is the runtime-owned approval (POL-APPROVE-12), never the model's value.
    """
    if security.level == "read_only":
        return READ_ONLY  # Design: a second barrier behind the engine's gate [POL-AUTO-06]
    if structure_refused(command, security):
        return NOT_ALLOWED.format(command=command)
    risk = command_risk(command)
    if risk == "high":
        named = set(security.allowed_commands)
        high = [w for w in segments(command) if segment_risk(w) == "high"]
        names = [executable_name(p[0]) for w in high for p in programs(w)] or [""]
        if security.block_high_risk_commands and not all(n in named for n in names):
            return HIGH_BLOCKED
    # [POL-SHELL-06] [POL-SHELL-07] only `supervised` asks; `full` runs what was not blocked.
    asks = risk == "high" or (risk == "medium" and security.require_approval_for_medium_risk)
    if asks and security.level == "supervised" and not approved:
        return APPROVAL.format(risk=risk)
    return None


@dataclass(frozen=True, slots=True)
class PathToken:
    """A token POL-SHELL-08 checks; `glob`: check its matches too; `brace`: refuse outright."""

    text: str
    glob: bool = False
    brace: bool = False


def _candidates(word: Word) -> list[tuple[str, str]]:
    """(text, bare) pairs worth checking inside one word."""
    found = [(word.text, word.bare)]
    eq = word.text.find("=")
    if eq > 0 and (_ASSIGNMENT.match(word.text) or word.text.startswith("--")):
        found.append((word.text[eq + 1 :], word.bare[eq + 1 :]))
    elif len(word.text) > 2 and word.text[0] == "-" and word.text[1] != "-":
        # Design: `-f/abs/secret` hands a path to a short option; check the attached value.
        found.append((word.text[2:], word.bare[2:]))
    return found


def path_tokens(command: str, through_link: Callable[[str], bool]) -> list[PathToken]:
    """[POL-SHELL-08] the tokens of `command` that must pass the read path check.

    `through_link(token)` answers whether a relative token names an existing entry of the
    workspace whose canonical path differs from its lexical one.
    """
    found: list[PathToken] = []
    for item in lex(command).items:
        if not isinstance(item, Word):
            continue
        for text, bare in _candidates(item):
            glob = any(c in bare for c in "*?[")
            brace = _BRACE.search(bare) is not None
            parts = re.split(r"[/\\]", text)
            # Design: any leading `~` (not only `~/`): the shell expands `~` and `~user` too.
            lexical = (text.startswith(("/", "~")) and text != "/dev/null") or ".." in parts
            if lexical or glob or brace or (text and through_link(text)):
                found.append(PathToken(text, glob, brace))
    return found


def path_refusal(tokens: list[PathToken], allows: Callable[[PathToken], bool]) -> str | None:
    """[POL-SHELL-08] the refusal for the first token `allows` rejects (brace tokens always)."""
    for token in tokens:
        if token.brace or not allows(token):
            return PATH_BLOCKED.format(token=token.text)
    return None
