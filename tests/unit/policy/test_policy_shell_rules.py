"""The command policy of `shell` as tables (policy.md §4.3, POL-SHELL-02…08)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from zeroclaw_ref.config.model import DEFAULT_ALLOWED_COMMANDS
from zeroclaw_ref.policy import shell_rules
from zeroclaw_ref.policy.security import SecurityPolicy

NOT_ALLOWED = "Command not allowed by security policy: "
HIGH_BLOCKED = "Command blocked: high-risk command is disallowed by policy"
HIGH_APPROVAL = "Command requires explicit approval (approved=true): high-risk operation"
MEDIUM_APPROVAL = "Command requires explicit approval (approved=true): medium-risk operation"


def policy(**changes: object) -> SecurityPolicy:
    base = SecurityPolicy(
        level="supervised",
        workspace_dir=Path("/ws"),
        allowed_roots=(Path("/ws"),),
        workspace_only=True,
        forbidden_paths=(),
        allowed_commands=DEFAULT_ALLOWED_COMMANDS,
        require_approval_for_medium_risk=True,
        block_high_risk_commands=True,
        shell_env_passthrough=(),
        allowed_tools=None,
        excluded_tools=frozenset(),
    )
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def refusal(command: str, approved: bool = False, **changes: object) -> str | None:
    return shell_rules.command_refusal(command, policy(**changes), approved)


REFUSED_CONSTRUCTS = [
    "echo `id`",
    "echo $(id)",
    "echo ${HOME}",
    "cat <(ls)",
    "echo >(cat)",
    "echo $HOME",
    "echo $_x",
    'echo "$HOME"',
    "cat $'\\x2e\\x2e/secret'",
    'cat $"x"',
    "echo '$(quoted)'",
    "echo hi > out.txt",
    "echo hi >> out.txt",
    "echo hi 2> err.txt",
    "echo hi >| out.txt",
    "echo hi >&file",
    "echo hi &> /dev/null",
    "cat < file",
    "cat 0<&3",
    "cat <> file",
    "echo x | tee out",
    "echo x | /usr/bin/tee out",
    "echo x | 'tee' out",
    "ls &",
    "ls & cat x",
    "ls |& cat",
]


@pytest.mark.req("POL-SHELL-02")
@pytest.mark.parametrize("command", REFUSED_CONSTRUCTS)
def test_each_forbidden_construct_is_refused_with_the_command_text(command: str) -> None:
    assert refusal(command) == NOT_ALLOWED + command


ALLOWED_CONSTRUCTS = [
    "echo hi > /dev/null",
    "echo hi >/dev/null 2>&1",
    "echo hi 2>/dev/null",
    "echo hi >> /dev/null",
    "echo hi 1>&2",
    "ls && pwd",
    "ls || pwd",
    "ls; pwd",
    "ls | wc -l",
    "ls\npwd",
    "echo '$HOME'",
    "echo 'a > b'",
    'echo "a > b"',
    "echo 'a & b'",
    "echo a\\&b",
    "echo \\$HOME",
    "cat <<EOF",
    "cat <<-EOF",
    "cat <<< hello",
    "echo $1 $? $$",
    "echo 'tee'x",
    "grep tee-shirt x",
]


@pytest.mark.req("POL-SHELL-02", "POL-SHELL-03")
@pytest.mark.parametrize("command", ALLOWED_CONSTRUCTS)
def test_quoted_and_permitted_constructs_pass(command: str) -> None:
    assert refusal(command) is None


ALLOW_LIST = [
    ("ls -la", None),
    ("LC_ALL=C ls", None),
    ("A=1 B='x y' ls", None),
    ("/bin/LS", None),
    ("ls | sort", NOT_ALLOWED + "ls | sort"),
    ("ls; bash -c id", NOT_ALLOWED + "ls; bash -c id"),
    ("ls && sh x", NOT_ALLOWED + "ls && sh x"),
    ("ls || perl -e 1", NOT_ALLOWED + "ls || perl -e 1"),
    ("ls\nvi", NOT_ALLOWED + "ls\nvi"),
    ("'bash' -c id", NOT_ALLOWED + "'bash' -c id"),
    ("{ bash; }", NOT_ALLOWED + "{ bash; }"),
    ("(bash)", NOT_ALLOWED + "(bash)"),
    ("if ls; then bash; fi", NOT_ALLOWED + "if ls; then bash; fi"),
    ("env bash", NOT_ALLOWED + "env bash"),
    ("f() { ls; }; f", NOT_ALLOWED + "f() { ls; }; f"),
    ("echo 'ls; bash'", None),
    ("echo ls\\;bash", None),
]


@pytest.mark.req("POL-SHELL-03")
@pytest.mark.parametrize(("command", "expected"), ALLOW_LIST)
def test_every_segment_executable_must_be_allowed(command: str, expected: str | None) -> None:
    assert refusal(command) == expected


@pytest.mark.req("POL-SHELL-03")
def test_a_star_allows_any_executable() -> None:
    assert refusal("sort x | uniq", allowed_commands=("*",)) is None
    assert refusal("sort x", allowed_commands=("SORT",)) is None


@pytest.mark.req("POL-SHELL-03")
def test_a_wrapped_program_must_be_allowed_too() -> None:
    assert refusal("env ls", allowed_commands=("env", "ls")) is None
    assert refusal("env -i A=1 bash", allowed_commands=("env", "ls")) is not None
    assert refusal("xargs -0 bash", allowed_commands=("xargs",)) is not None


ARGUMENT_PATTERNS = [
    "find . -exec cat {} ;",
    "find . -ok rm {} ;",
    "find . -execdir id ;",
    "git -c core.pager=id log",
    "git config user.name x",
    "git alias",
    "git log config.x",
    "git show alias.y",
    "git --config-env=core.pager=X log",
    "python -c 1",
    "python3 -cprint(1)",
    "python3 -m http.server",
    "python3 -Ic 1",
    "python3 '-c' 1",
    "node -e 1",
    "node --eval=1",
    "node -p 1",
    "node --print 1",
    "node -pe 1",
    "pip install x",
    "pip3 download x",
    "npm exec x",
    "npm install",
    "npm i x",
    "npm add x",
    "npm ci",
    "cargo install x",
]


@pytest.mark.req("POL-SHELL-04")
@pytest.mark.parametrize("command", ARGUMENT_PATTERNS)
def test_argument_patterns_are_refused(command: str) -> None:
    allowed = (*DEFAULT_ALLOWED_COMMANDS, "pip3")
    assert refusal(command, allowed_commands=allowed) == NOT_ALLOWED + command


@pytest.mark.req("POL-SHELL-04")
@pytest.mark.parametrize(
    "command", ["find . -name x", "git status", "python3 script.py", "node app.js", "pip list"]
)
def test_harmless_arguments_pass(command: str) -> None:
    assert refusal(command) is None


RISKS = [
    ("ls", "low"),
    ("rm x", "high"),
    ("/usr/bin/CURL x", "high"),
    ("ls | sudo x", "high"),
    ("echo rm -rf /", "high"),
    ("echo RM -FR /x", "high"),
    (":(){:|:&};:", "high"),
    ("env rm x", "high"),
    ("{ rm x; }", "high"),
    ("f() { rm x; }", "high"),
    ("git commit -m x", "medium"),
    ("git status", "low"),
    ("git log commit", "low"),
    ("npm install", "medium"),
    ("pnpm add x", "medium"),
    ("yarn publish", "medium"),
    ("cargo clean", "medium"),
    ("cargo build", "low"),
    ("touch a", "medium"),
    ("ls && mkdir a", "medium"),
    ("mv a b", "medium"),
    ("mkdir a; rm b", "high"),
]


@pytest.mark.req("POL-SHELL-05")
@pytest.mark.parametrize(("command", "risk"), RISKS)
def test_risk_is_the_highest_segment_risk(command: str, risk: str) -> None:
    assert shell_rules.command_risk(command) == risk


@pytest.mark.req("POL-SHELL-06")
def test_high_risk_is_blocked_unless_named() -> None:
    assert refusal("rm x", allowed_commands=("*",)) == HIGH_BLOCKED
    assert refusal("rm x", True, allowed_commands=("*",), level="full") == HIGH_BLOCKED
    assert refusal("env rm x", allowed_commands=("env", "*")) == HIGH_BLOCKED
    assert refusal("rm x", allowed_commands=("rm",)) == HIGH_APPROVAL
    assert refusal("rm x", True, allowed_commands=("rm",)) is None
    assert refusal("rm x", allowed_commands=("rm",), level="full") is None


@pytest.mark.req("POL-SHELL-06", "POL-SHELL-02")
def test_the_escape_hatch_skips_structure_but_not_risk() -> None:
    hatch = {"allowed_commands": ("*",), "block_high_risk_commands": False}
    assert refusal("echo $HOME > out; bash &", **hatch) is None
    assert refusal("python3 -c 1", **hatch) is None
    assert refusal("rm x", **hatch) == HIGH_APPROVAL
    assert refusal("rm x", True, **hatch) is None
    assert refusal("rm x", level="full", **hatch) is None
    assert refusal("touch x", **hatch) == MEDIUM_APPROVAL
    # `*` with blocking on is no escape hatch
    assert refusal("echo $HOME", allowed_commands=("*",)) == NOT_ALLOWED + "echo $HOME"


@pytest.mark.req("POL-SHELL-07")
def test_medium_risk_needs_approval_only_when_configured_and_supervised() -> None:
    allowed = (*DEFAULT_ALLOWED_COMMANDS, "touch")
    assert refusal("touch a", allowed_commands=allowed) == MEDIUM_APPROVAL
    assert refusal("git commit -m x") == MEDIUM_APPROVAL
    assert refusal("git commit -m x", True) is None
    assert refusal("git commit -m x", require_approval_for_medium_risk=False) is None
    assert refusal("git commit -m x", level="full") is None


@pytest.mark.req("POL-AUTO-06")
def test_read_only_refuses_every_command_as_a_second_barrier() -> None:
    expected = "Security policy: read-only mode, cannot perform 'shell'"
    assert refusal("ls", level="read_only") == expected
    assert refusal("ls", True, level="read_only") == expected


@pytest.mark.req("POL-SHELL-03")
def test_segments_split_only_on_unquoted_separators() -> None:
    assert shell_rules.segments("a 'b;c' | d \"e && f\"\ng") == [
        ["a", "b;c"],
        ["d", "e && f"],
        ["g"],
    ]
    assert shell_rules.segments("a\\;b;") == [["a;b"]]


def _tokens(command: str, links: frozenset[str] = frozenset()) -> list[str]:
    return [t.text for t in shell_rules.path_tokens(command, lambda t: t in links)]


PATH_TOKENS = [
    ("cat a.txt", []),
    ("cat /etc/passwd", ["/etc/passwd"]),
    ("cat /dev/null", []),
    ("cat ~/x", ["~/x"]),
    ("cat ~root/x", ["~root/x"]),
    ("ls ~", ["~"]),
    ("cat ../x", ["../x"]),
    ("cat sub/../../x", ["sub/../../x"]),
    ("cat a..b", []),
    ("cat '/quoted path'", ["/quoted path"]),
    ("X=../secret ls", ["../secret"]),
    ("grep --file=/abs/secret x", ["/abs/secret"]),
    ("grep -f/abs/secret x", ["/abs/secret"]),
    ("cat link", ["link"]),
    ("cat x;cat /y", ["/y"]),
    ("echo x 2>/dev/null", []),
]


@pytest.mark.req("POL-SHELL-08")
@pytest.mark.parametrize(("command", "expected"), PATH_TOKENS)
def test_path_like_tokens_are_selected(command: str, expected: list[str]) -> None:
    assert _tokens(command, frozenset({"link"})) == expected


@pytest.mark.req("POL-SHELL-08")
def test_unquoted_globs_and_braces_are_marked() -> None:
    (glob,) = shell_rules.path_tokens("cat l*", lambda t: False)
    assert glob.glob and not glob.brace
    assert shell_rules.path_tokens("grep 'a*' x", lambda t: False) == []
    (brace,) = shell_rules.path_tokens("cat {/etc/passwd,x}", lambda t: False)
    assert brace.brace
    refused = shell_rules.path_refusal([brace], lambda t: True)
    assert refused == "Path blocked by security policy: {/etc/passwd,x}"
