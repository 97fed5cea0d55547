"""Profiles and needs: which agents a scenario can judge ([TX-PROFILE-01] to [TX-NEEDS-04]).

Every scenario names one profile. ``acp`` scenarios hold for any agent that
follows base ACP v1: they use no host hook and begin with ``initialize``.
``zeroclaw`` scenarios pin what ZeroClaw adds on ACP (string prompts, config,
the demo and scripted models...), and ``zeroclaw-mcp`` those that also play
fake MCP servers. ``client`` scenarios judge ACP *clients*: only ``serve``
plays them, and ``run`` reports them not-applicable ([ZC-SERVE-02]).

A scenario's *needs* are the agent capabilities (dotted paths below the
``agentCapabilities`` of the ``initialize`` result) and the host hooks it
relies on. Hooks follow from ``setup`` and ``channels`` by themselves; the
header member ``needs`` adds capabilities, or a hook nothing in ``setup``
shows. A need that the agent lacks makes the verdict ``not-applicable``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from .jsonlex import JSON

PROFILES = ("acp", "zeroclaw", "zeroclaw-mcp", "client")
# [ZC-SERVE-02] the profile of scenarios written to judge clients through serve
CLIENT_PROFILE = "client"
CLIENT_ONLY = "judges clients; play it with serve"
# [ZC-SERVE-03] client capabilities (below initialize's params.clientCapabilities) a
# scenario may need; serve writes fs/* and terminal/* requests, elicitation/* messages and
# notice/compaction updates only to a client offering them. The first three are booleans
# (advertised when true), the others objects (advertised when present and not null: ACP
# makes `{}` the way to offer an elicitation mode, notices or compaction).
CLIENT_CAPABILITIES = (
    "fs.readTextFile",
    "fs.writeTextFile",
    "terminal",
    "elicitation.form",
    "elicitation.url",
    "session.notices",
    "session.compaction",
)
# [TX-NEEDS-01] the hooks of transcripts.md §7 an agent may or may not honour
HOOKS = ("config", "model", "workspace")
# [TX-NEEDS-01] capabilities of the ACP v1 stable schema a scenario may need
CAPABILITIES = (
    "loadSession",
    "promptCapabilities.image",
    "promptCapabilities.audio",
    "promptCapabilities.embeddedContext",
    "mcpCapabilities.http",
    "mcpCapabilities.sse",
    "sessionCapabilities.additionalDirectories",
    "sessionCapabilities.close",
    "sessionCapabilities.delete",
    "sessionCapabilities.list",
    "sessionCapabilities.resume",
)
NEEDS = HOOKS + CAPABILITIES

Report = Callable[[int, str, str], None]


def implied_hooks(setup: Mapping[str, JSON], channel_count: int) -> frozenset[str]:
    """[TX-NEEDS-02] hooks that the setup and the peer channels rely on."""
    hooks: set[str] = set()
    if "config" in setup or "config_dir" in setup or channel_count:
        hooks.add("config")
    if "model" in setup:
        hooks.add("model")
    if "workspace" in setup:
        hooks.add("workspace")
    return frozenset(hooks)


def read_profile(value: JSON, add: Report) -> str:
    """[TX-PROFILE-01] the header's ``profile`` (``zeroclaw`` when invalid)."""
    if not isinstance(value, str) or value not in PROFILES:
        add(1, "TX-PROFILE-01", f"profile must be one of {', '.join(PROFILES)}")
        return "zeroclaw"
    return value


def _names(
    value: JSON, known: tuple[str, ...], member: str, rule: str, add: Report
) -> tuple[str, ...]:
    """An array of distinct names out of ``known``; () when it is not an array of strings."""
    if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
        add(1, rule, f"{member} must be an array of strings")
        return ()
    names = tuple(n for n in value if isinstance(n, str))
    what = "client need" if member == "client_needs" else "need"
    for name in names:
        if name not in known:
            add(1, rule, f"unknown {what} {name!r} (known: {', '.join(known)})")
    if len(set(names)) != len(names):
        add(1, rule, f"{member} must be distinct")
    return names


def read_needs(value: JSON, add: Report) -> tuple[str, ...]:
    """[TX-NEEDS-01] the header's ``needs``."""
    return _names(value, NEEDS, "needs", "TX-NEEDS-01", add)


def acp_uses_no_hook(
    setup: Mapping[str, JSON], channel_count: int, needs: tuple[str, ...], add: Report
) -> None:
    """[TX-PROFILE-02] base ACP: no host hook, whatever setup says or needs ask."""
    used = implied_hooks(setup, channel_count) | (set(needs) & set(HOOKS))
    if used:
        add(1, "TX-PROFILE-02", f"an acp scenario uses no host hook; it uses {sorted(used)}")


def read_client_needs(value: JSON, add: Report) -> tuple[str, ...]:
    """[ZC-SERVE-03] the header's ``client_needs``."""
    return _names(value, CLIENT_CAPABILITIES, "client_needs", "ZC-SERVE-03", add)


def read_client_files(value: JSON, add: Report) -> dict[str, str]:
    """[ZC-SERVE-04] the header's ``client_files``: relative path to text."""
    files: dict[str, str] = {}
    if not isinstance(value, dict):
        add(1, "ZC-SERVE-04", "client_files must be an object of relative path to text")
        return files
    for name, text in value.items():
        parts = name.split("/")
        if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
            add(1, "ZC-SERVE-04", f"client_files: {name!r} is not a plain relative path")
        elif not isinstance(text, str):
            add(1, "ZC-SERVE-04", f"client_files: the content of {name!r} must be a string")
        else:
            files[name] = text
    return files


def capability_needs(needs: Iterable[str]) -> tuple[str, ...]:
    return tuple(n for n in needs if n in CAPABILITIES)


def all_needs(needs: Iterable[str], setup: Mapping[str, JSON], channel_count: int) -> list[str]:
    """The scenario's effective needs: hooks implied by setup, then the declared ones."""
    out = sorted(implied_hooks(setup, channel_count))
    out += [n for n in needs if n not in out]
    return out


def has_capability(capabilities: JSON, name: str) -> bool:
    """[TX-NEEDS-03] a dotted path is offered when its value is present, not null, not false."""
    value: JSON = capabilities
    for part in name.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return value is not None and value is not False


def missing(needs: Iterable[str], hooks: frozenset[str], capabilities: JSON | None) -> list[str]:
    """Needs the agent does not meet; capabilities are judged only once known."""
    lacking: list[str] = []
    for name in needs:
        if name in HOOKS and name not in hooks:
            lacking.append(f"hook {name}")
        elif (
            name in CAPABILITIES
            and capabilities is not None
            and not has_capability(capabilities, name)
        ):
            lacking.append(f"capability {name}")
    return lacking


def first_send_is_initialize(frames: Iterable[tuple[str, str, JSON]]) -> bool:
    """Whether the first message a scenario writes on ``acp`` is an initialize request."""
    for verb, ch, value in frames:
        if ch != "acp" or verb not in ("send", "send_raw"):
            continue
        return (
            verb == "send"
            and isinstance(value, dict)
            and value.get("method") == "initialize"
            and "id" in value
        )
    return False
