"""What a client must do in a served scenario, as data and as prose ([ZC-SERVE-07]).

``show --json`` gives a client's own test harness one step per ``send`` frame:
the message to send (placeholders left as text) or the answer to give, and the
``after`` conditions that say when: how many ``session/update`` notifications
and agent requests must have arrived, and which earlier requests must have been
answered. The conditions are counted from the ``expect`` frames before the
step, which serve writes before it waits for that step (transcripts.md
[TX-SERVE-03]), so a harness that takes each step as soon as its conditions
hold replays the conversation in the order serve judges.
"""

from __future__ import annotations

from ..core.jsonlex import JSON, dumps
from ..core.transcript import Scenario
from .rules import CAPABILITY_OF, is_request, method_of
from .values import servable_problems


def _expected_values(verb: str, value: JSON) -> list[JSON]:
    if verb == "expect":
        return [value]
    if verb == "expect_unordered" and isinstance(value, list):
        return list(value)
    return []


def steps(sc: Scenario) -> list[dict[str, JSON]]:
    """One step per ``send`` frame on ``acp``, in file order."""
    out: list[dict[str, JSON]] = []
    updates = 0
    requests = 0
    answered: list[JSON] = []  # frame numbers of client requests already answered
    pending: dict[str, int] = {}  # the literal id of an unanswered client request -> its frame
    agent_requests: dict[str, str] = {}  # the literal id of an agent request -> its method
    last_agent_method = ""
    for frame in sc.frames:
        if frame.ch != "acp":
            continue
        for value in _expected_values(frame.verb, frame.value):
            method = method_of(value)
            if method == "session/update" and not is_request(value):
                updates += 1
            elif method is not None and is_request(value) and isinstance(value, dict):
                requests += 1
                agent_requests[dumps(value["id"])] = last_agent_method = method
            elif isinstance(value, dict) and "id" in value:
                line = pending.pop(dumps(value["id"]), None)
                if line is not None:
                    answered.append(line)
        if frame.verb != "send" or not isinstance(frame.value, dict):
            continue
        value = frame.value
        after: dict[str, JSON] = {
            "updates": updates,
            "results": list(answered),
            "requests": requests,
        }
        method = method_of(value)
        step: dict[str, JSON] = {"frame": frame.line}
        if method is not None:
            step["kind"] = "request" if "id" in value else "notification"
            step["method"] = method
            if "params" in value:
                step["params"] = value["params"]
            if "id" in value:
                pending[dumps(value["id"])] = frame.line
        else:
            answered_id = value.get("id")
            answered_method = agent_requests.get(dumps(answered_id), last_agent_method)
            step["kind"] = "response"
            step["method"] = answered_method
            step["id"] = answered_id
            for key in ("result", "error"):
                if key in value:
                    step[key] = value[key]
            # fs/* and terminal/* answers come from the client's real files and processes
            step["auto"] = answered_method in CAPABILITY_OF
        step["after"] = after
        out.append(step)
    return out


def show_document(sc: Scenario) -> dict[str, JSON]:
    """The object ``show --json`` prints (the format agreed for issue 15)."""
    problems = servable_problems(sc)
    doc: dict[str, JSON] = {
        "scenario": sc.id,
        "description": sc.description,
        "requirements": list[JSON](sc.requirements),
        "profile": sc.profile,
        "level": sc.level,
        "servable": not problems,
    }
    if problems:
        doc["problems"] = [str(p) for p in problems]
    doc["client_needs"] = list[JSON](sc.client_needs)
    doc["client_files"] = dict[str, JSON](sc.client_files)
    doc["steps"] = list[JSON](steps(sc))
    return doc


def _when(after: JSON, first: bool) -> str:
    if not isinstance(after, dict):
        return ""
    parts: list[str] = []
    results = after.get("results")
    if isinstance(results, list) and results:
        parts.append("the answers to line(s) " + ", ".join(str(r) for r in results))
    for key, word in (("updates", "session/update notification(s)"), ("requests", "request(s)")):
        n = after.get(key)
        if isinstance(n, int) and n:
            parts.append(f"{n} {word} in all")
    if not parts:
        return "at once" if first else "at once, without waiting"
    return "after " + " and ".join(parts)


def prose(sc: Scenario) -> list[str]:
    """``show``'s text version of the steps, one numbered line each."""
    lines = ["// what the client must do (serve plays the agent):"]
    if sc.client_needs:
        lines.append("//   advertise in initialize: " + ", ".join(sc.client_needs))
    for name in sc.client_files:
        lines.append(f"//   create {name} in the session's cwd before it starts")
    for n, step in enumerate(steps(sc), 1):
        when = _when(step.get("after"), n == 1)
        kind, method = step.get("kind"), step.get("method")
        if kind == "response":
            if step.get("auto"):
                what = f"answer the {method} request from your own files/processes"
            else:
                shown = dumps(step["result"] if "result" in step else step.get("error"))
                what = f"answer the {method} request with {shown}"
        else:
            params = dumps(step["params"]) if "params" in step else "no params"
            what = f"send the {kind} {method} with {params}"
        lines.append(f"//   {n}. (line {step['frame']}) {when}: {what}")
    return lines
