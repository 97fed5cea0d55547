"""What a real ACP client can be held to in ``serve`` (issue 15; ZC-SERVE-01 to ZC-SERVE-10).

transcripts.md §14 makes a scenario servable when a client *could* replay it;
these rules narrow that to what a real editor's client does by itself:

- it begins with ``initialize`` [ZC-SERVE-01];
- it sends only methods of the ACP v1 stable schema that flow from client to
  agent, never an oracle hook (``_zeroclaw/*``) or another agent-only name
  [ZC-SERVE-05];
- an ``fs/*`` or ``terminal/*`` request, an ``elicitation/create`` of a mode,
  an ``elicitation/complete``, or a ``notice`` / ``compaction_*`` update the
  scripted agent writes is announced by the header's ``client_needs``, so serve
  can check the client advertised it before writing one [ZC-SERVE-03];
- it writes only well-formed JSON-RPC objects and answers only requests it was
  sent: a scenario that makes the client send a batch, a scalar line, a response
  to nothing or params its schema forbids (tag ``malformed-client-input``) judges
  how an *agent* copes with a broken client, and no conformant client can play
  it [ZC-SERVE-10].

The method tables are facts of the pinned schema (fixtures/schema/acp-v1.schema.json,
``x-side``/``x-method``), written out so that no import needs the schema file.
"""

from __future__ import annotations

from ..core.jsonlex import JSON
from ..core.transcript import Frame, Problem, Scenario

# Requests and notifications a client sends to an agent in ACP v1 (stable schema).
CLIENT_METHODS = frozenset(
    {"initialize", "authenticate", "logout", "session/new", "session/load", "session/list"}
    | {"session/delete", "session/resume", "session/close", "session/set_mode"}
    | {"session/set_config_option", "session/prompt", "session/cancel", "$/cancel_request"}
)
# A scenario tagged so sends what a conformant client never writes [ZC-SERVE-10].
MALFORMED_TAG = "malformed-client-input"
# Agent requests whose answer the client computes from its own files and processes.
CAPABILITY_OF = {
    "fs/read_text_file": "fs.readTextFile",
    "fs/write_text_file": "fs.writeTextFile",
    "terminal/create": "terminal",
    "terminal/output": "terminal",
    "terminal/wait_for_exit": "terminal",
    "terminal/kill": "terminal",
    "terminal/release": "terminal",
}


# session/update kinds ACP lets an agent send only to a client that offered them
UPDATE_CAPABILITY = {
    "notice": "session.notices",
    "compaction_update": "session.compaction",
    "compaction_summary_chunk": "session.compaction",
}
# elicitation/create: the capability of each mode (ACP: use only a mode the client offered)
ELICITATION_MODE = {"form": "elicitation.form", "url": "elicitation.url"}


def need_of(value: JSON) -> str | None:
    """[ZC-SERVE-03] the client capability a message serve writes relies on, if any."""
    method = method_of(value)
    if method is None or not isinstance(value, dict):
        return None
    params = value.get("params")
    if is_request(value):
        if method == "elicitation/create":
            mode = params.get("mode") if isinstance(params, dict) else None
            # a custom mode has no capability of its own: it still needs elicitation
            return ELICITATION_MODE.get(mode, "elicitation") if isinstance(mode, str) else None
        return CAPABILITY_OF.get(method)
    if method == "elicitation/complete":
        return "elicitation.url"  # completes a URL-mode elicitation only
    if method == "session/update" and isinstance(params, dict):
        update = params.get("update")
        kind = update.get("sessionUpdate") if isinstance(update, dict) else None
        return UPDATE_CAPABILITY.get(kind) if isinstance(kind, str) else None
    return None


def is_request(value: JSON) -> bool:
    return isinstance(value, dict) and isinstance(value.get("method"), str) and "id" in value


def method_of(value: JSON) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("method"), str):
        return str(value["method"])
    return None


def judged(sc: Scenario) -> list[Frame]:
    """The frames a serve session acts on (notes and the IUT-only checks left out)."""
    return [f for f in sc.frames if f.verb not in ("note", "expect_exit", "expect_stderr")]


def real_client_problems(sc: Scenario) -> list[Problem]:
    """Why a real client could not replay ``sc``; empty when it can."""
    out: list[Problem] = []
    frames = judged(sc)
    if frames and not (
        frames[0].verb == "send"
        and is_request(frames[0].value)
        and method_of(frames[0].value) == "initialize"
    ):
        # [ZC-SERVE-01] every real client initializes before anything else
        message = "a real client begins with initialize; this scenario does not"
        out.append(Problem(sc.display, frames[0].line, "ZC-SERVE-01", message))
    for frame in frames:
        method = method_of(frame.value)
        if frame.verb == "send" and method is not None and method not in CLIENT_METHODS:
            # [ZC-SERVE-05] a hook or a name no ACP v1 client sends of its own accord
            message = f"a real client never sends {method!r} (not a client method of ACP v1)"
            out.append(Problem(sc.display, frame.line, "ZC-SERVE-05", message))
    out += capability_problems(sc)
    out += malformed_problems(sc)
    return out


def malformed_problems(sc: Scenario) -> list[Problem]:
    """[ZC-SERVE-10] what only a broken client would write; empty for a playable scenario."""
    out: list[Problem] = []

    def add(line: int, message: str) -> None:
        out.append(Problem(sc.display, line, "ZC-SERVE-10", message))

    tags = sc.header.get("tags")
    if isinstance(tags, list) and MALFORMED_TAG in tags:
        add(1, f"tagged {MALFORMED_TAG}: it judges how an agent copes with a broken client")
    asked: set[str] = set()
    for frame in judged(sc):
        values = frame.value if frame.verb == "expect_unordered" else [frame.value]
        if frame.verb in ("expect", "expect_unordered") and isinstance(values, list):
            asked.update(_id_text(v) for v in values if is_request(v))
        if frame.verb != "send":
            continue
        value = frame.value
        if not isinstance(value, dict):
            add(frame.line, "a real client writes JSON-RPC objects only, not a batch or a scalar")
        elif "method" not in value and _id_text(value) not in asked:
            add(frame.line, "a real client answers only requests it was sent")
    return out


def _id_text(message: JSON) -> str:
    """A JSON-RPC id as comparable text (1 and "1" are different ids)."""
    return repr(message.get("id")) if isinstance(message, dict) else ""


def capability_problems(sc: Scenario) -> list[Problem]:
    """[ZC-SERVE-03] every capability-gated message serve would write is in ``client_needs``."""
    out: list[Problem] = []
    for frame in sc.frames:
        if frame.verb not in ("expect", "expect_unordered"):
            continue
        values = frame.value if frame.verb == "expect_unordered" else [frame.value]
        for value in values if isinstance(values, list) else []:
            need = need_of(value)
            if need is not None and need not in sc.client_needs:
                message = f"it writes {method_of(value)} but client_needs lacks {need!r}"
                out.append(Problem(sc.display, frame.line, "ZC-SERVE-03", message))
    return out


def advertised(capabilities: JSON, need: str) -> bool:
    """[ZC-SERVE-03] the dotted path into clientCapabilities holds ``true`` or an object.

    ACP's boolean capabilities (fs.*, terminal) are offered by ``true``; its object-valued
    ones (elicitation.form, session.notices, ...) by any object, ``{}`` included, while an
    absent member, ``null`` or ``false`` offers nothing.
    """
    value: JSON = capabilities
    for part in need.split("."):
        if not isinstance(value, dict) or part not in value:
            return False
        value = value[part]
    return value is True or isinstance(value, dict)


def initialize_problem(params: JSON) -> tuple[str, str] | None:
    """(pointer, why) when a client's initialize params are not what ACP v1 allows.

    [ZC-SERVE-06] serve takes the client's own protocolVersion, clientCapabilities
    and clientInfo, whatever the frame shows, but holds them to their types.
    """
    if not isinstance(params, dict):
        return "/params", "initialize needs params (an object)"
    version = params.get("protocolVersion")
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= 65535:
        return "/params/protocolVersion", "protocolVersion must be an integer 0-65535"
    caps = params.get("clientCapabilities", {})
    if not isinstance(caps, dict):
        return "/params/clientCapabilities", "clientCapabilities must be an object"
    fs = caps.get("fs", {})
    if not isinstance(fs, dict):
        return "/params/clientCapabilities/fs", "fs must be an object"
    for name in ("readTextFile", "writeTextFile"):
        if name in fs and not isinstance(fs[name], bool):
            return f"/params/clientCapabilities/fs/{name}", f"{name} must be a boolean"
    if "terminal" in caps and not isinstance(caps["terminal"], bool):
        return "/params/clientCapabilities/terminal", "terminal must be a boolean"
    info = params.get("clientInfo")
    if info is not None:
        if not isinstance(info, dict):
            return "/params/clientInfo", "clientInfo must be an object"
        for name in ("name", "version"):
            if not isinstance(info.get(name), str):
                return f"/params/clientInfo/{name}", f"clientInfo.{name} must be a string"
    return None
