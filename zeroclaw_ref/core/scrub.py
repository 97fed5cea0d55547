"""Credential scrubbing (acp.md ACP-UPD-12), token redaction (policy.md POL-TOOL-06) and the
redaction of known secrets in every spelling a server may echo them (config.md CFG-PROV-08,
CFG-SECRETS-14).

The first two run on every text that leaves the process through the ACP wire or a log line;
`redact_secrets` runs where the secrets are known (a provider's key and header values).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit, urlunsplit

# [ACP-UPD-12] the key/value credential pattern, matched case-insensitively.
_CREDENTIAL: Final = re.compile(
    r"""(authorization|token|api[_-]?key|password|secret|user[_-]?key|bearer|credential"""
    r"""|set[_-]?cookie|cookie)["']?\s*[:=]\s*(?:"([^"]{8,})"|'([^']{8,})'"""
    r"""|([a-zA-Z0-9_\-./+=]{8,}))""",
    re.IGNORECASE,
)

# [POL-TOOL-06] provider-style tokens, replaced whole.
_TOKEN: Final = re.compile(r"(?:sk-|xoxb-|xoxp-|ghp_|gho_|ghu_|github_pat_|AIza)[A-Za-z0-9\-_.:]*")


def _replace_credential(match: re.Match[str]) -> str:
    key = match.group(1)
    value = match.group(2) or match.group(3) or match.group(4) or ""
    text = match.group(0)
    head = value[:4]
    # [ACP-UPD-12] Table 5-5: the separator and quoting of the match decide the shape.
    if ":" in text:
        return f'"{key}": "{head}*[REDACTED]"' if '"' in text else f"{key}: {head}*[REDACTED]"
    return f'{key}="{head}*[REDACTED]"' if '"' in text else f"{key}={head}*[REDACTED]"


def scrub_credentials(text: str) -> str:
    """[ACP-UPD-12] replace key/value credentials, keeping four characters of the value."""
    return _CREDENTIAL.sub(_replace_credential, text)


def redact_tokens(text: str) -> str:
    """[POL-TOOL-06] replace provider-style tokens by `[REDACTED]`."""
    return _TOKEN.sub("[REDACTED]", text)


def clean_output(text: str) -> str:
    """Token redaction, then credential scrubbing: the order of ACP-UPD-11."""
    return scrub_credentials(redact_tokens(text))


# --- known secrets, in every spelling ---------------------------------------------------------
#
# Design: a provider that rejects a key often quotes it back, and not always verbatim: inside a
# JSON body `/` may come back as `\/` or `\u002f`, in a URL or form body as `%2F`, and a key sent
# in a Basic credential comes back base64-encoded (or, for a Basic header value, decoded). So
# every character that is not an ASCII letter or digit matches any of its encodings, and the
# base64 and Basic forms are added as further spellings.

# A derived spelling (a base64 fragment, a part of a credential) shorter than this is left
# alone: it would match ordinary text, and reveals too little to matter.
_MIN_DERIVED: Final = 8
_AUTH_SCHEME: Final = re.compile(r"(basic|bearer|token)\s+(\S+)", re.IGNORECASE)
_URLSAFE: Final = str.maketrans("+/", "-_")
_BASE64_TAIL: Final = "[A-Za-z0-9+/_-]?={0,2}"
_HTML_NAMES: Final = {
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;",
    "/": "&sol;", "+": "&plus;", "=": "&equals;",
}  # fmt: skip


def _hex(value: int, width: int) -> str:
    """`value` as hex digits matching either case."""
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in f"{value:0{width}x}")


def _utf16_escape(char: str) -> str:
    """The JSON `\\uXXXX` escape of one character (a surrogate pair beyond the BMP); the
    backslash may itself be escaped any number of times (JSON inside a JSON string)."""
    data = char.encode("utf-16-be", "surrogatepass")
    units = [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]
    return "".join(r"\\+u" + _hex(unit, 4) for unit in units)


def _char_pattern(char: str) -> str:
    """A regular expression matching `char` in any of the encodings named above."""
    if char.isascii() and char.isalnum():
        return char
    code = ord(char)
    forms = [re.escape(char), _utf16_escape(char)]
    short = json.dumps(char, ensure_ascii=False)[1:-1]
    if short != char:  # `\"`, `\\`, `\n`, …
        forms.append(r"\\+" + re.escape(short[1:]))
    if char == "/":
        forms.append(r"\\+/")
    # `%2F`, also URL-encoded twice (`%252F`)
    forms.append("".join(f"%(?:25)*{_hex(b, 2)}" for b in char.encode("utf-8", "surrogatepass")))
    forms.append(f"&#0*{code};|&#[xX]0*{_hex(code, 1)};")  # an HTML character reference
    if char in _HTML_NAMES:
        forms.append(_HTML_NAMES[char])
    if char == " ":
        forms.append(r"\+")  # form encoding
    return "(?:" + "|".join(forms) + ")"


def _credential_parts(secret: str) -> list[str]:
    """For an `Authorization`-style value: the credential alone and, for Basic, its decoded
    `user:password` and the password."""
    match = _AUTH_SCHEME.fullmatch(secret.strip())
    if match is None:
        return []
    parts = [match.group(2)]
    if match.group(1).lower() == "basic":
        try:
            decoded = base64.b64decode(match.group(2), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            decoded = ""
        parts += [decoded, decoded.partition(":")[2]]
    return [part for part in parts if len(part) >= _MIN_DERIVED]


def _base64_fragments(secret: str) -> list[str]:
    """The base64 text that `secret` becomes wherever it sits inside an encoded value (such as
    `user:<key>` of a Basic credential): for each of the three byte alignments, the characters
    determined by the secret's bytes alone, in the standard and the URL-safe alphabet."""
    data = secret.encode("utf-8", "surrogatepass")
    if len(data) < _MIN_DERIVED:
        return []
    fragments: list[str] = []
    for shift in range(3):
        encoded = base64.b64encode(bytes(shift) + data).decode("ascii")
        fragment = encoded[-(-8 * shift // 6) : 8 * (shift + len(data)) // 6]
        fragments += [fragment, fragment.translate(_URLSAFE)]
    return fragments


def _secrets_pattern(secrets: Iterable[str]) -> re.Pattern[str] | None:
    spellings: set[str] = set()
    for secret in secrets:
        if secret:
            spellings.add(secret)
            spellings.update(_credential_parts(secret))
    # form -> what may follow it: a base64 fragment takes the rest of its group along (the
    # last character, partly the secret's, and the padding).
    forms = dict.fromkeys(spellings, "")
    for spelling in spellings:
        forms.update(dict.fromkeys(_base64_fragments(spelling), _BASE64_TAIL))
    if not forms:
        return None
    # Longest first, so a whole header value wins over the credential inside it.
    ordered = sorted(forms, key=lambda form: (-len(form), form))
    return re.compile(
        "|".join("".join(_char_pattern(c) for c in form) + forms[form] for form in ordered)
    )


def redact_secrets(text: str, secrets: Iterable[str]) -> str:
    """Replace every occurrence of each secret by `[REDACTED]`, whether verbatim, JSON-escaped,
    URL-encoded, HTML-escaped or base64-encoded (config.md CFG-PROV-08, CFG-SECRETS-14)."""
    pattern = _secrets_pattern(secrets)
    return text if pattern is None else pattern.sub("[REDACTED]", text)


def url_without_credentials(url: str) -> str:
    """`url` fit for an error text: no userinfo (`user:password@`), no query and no fragment
    (where tokens travel), so naming an endpoint never leaks its credentials."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.hostname:
        return redact_tokens(url.split("?", 1)[0].split("#", 1)[0].rsplit("@", 1)[-1])
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    return redact_tokens(urlunsplit((parts.scheme, netloc, parts.path, "", "")))
