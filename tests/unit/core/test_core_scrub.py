"""Credential scrubbing (ACP-UPD-12, Table 5-5), token redaction (POL-TOOL-06) and known
secrets in every encoding (CFG-PROV-08, CFG-SECRETS-14)."""

from __future__ import annotations

import base64
import json
import re
import urllib.parse

import pytest

from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.scrub import clean_output, redact_secrets, redact_tokens, scrub_credentials

CASES = [
    ("export API_KEY=abcdef123456", "export API_KEY=abcd*[REDACTED]"),
    ('password="hunter2hunter2"', 'password="hunt*[REDACTED]"'),
    ("token: abcdefghijkl", "token: abcd*[REDACTED]"),
    ('"secret": "s3cr3t-value"', '""secret": "s3cr*[REDACTED]"'),
    ("Authorization: Bearer123456789", "Authorization: Bear*[REDACTED]"),
    ("token=short", "token=short"),  # under 8 characters: not a credential
    ("nothing to see here", "nothing to see here"),
]


@pytest.mark.req("ACP-UPD-12")
@pytest.mark.parametrize(("text", "expected"), CASES)
def test_credentials_keep_four_characters_and_the_shape_of_table_5_5(
    text: str, expected: str
) -> None:
    assert scrub_credentials(text) == expected


@pytest.mark.req("POL-TOOL-06")
@pytest.mark.parametrize(
    "token", ["sk-abc123", "xoxb-1-2", "ghp_AAAA", "github_pat_x.y", "AIzaSyD-zz", "gho_1:2"]
)
def test_provider_tokens_are_replaced_whole(token: str) -> None:
    assert redact_tokens(f"key {token} end") == "key [REDACTED] end"


@pytest.mark.req("ACP-UPD-11")
def test_redaction_runs_before_scrubbing() -> None:
    assert clean_output("api_key=sk-abcdefgh123") == "api_key=[REDACTED]"


def test_sequential_ids_are_valid_uuid4_strings_per_kind() -> None:
    ids = SequentialIds()
    assert ids.new("session") == "00000001-0000-4000-8000-000000000001"
    assert ids.new("approval") == "00000002-0000-4000-8000-000000000001"
    assert ids.new("session") == "00000001-0000-4000-8000-000000000002"


# --- known secrets in every spelling a server may echo (CFG-PROV-08, CFG-SECRETS-14) ----------

KEY = "Zk3y/Wi+th=Sl/ash+Pl=us=="  # `/`, `+` and `=`: the characters encoders rewrite


def _pct(text: str, *, lower: bool = False) -> str:
    encoded = urllib.parse.quote(text, safe="")
    return re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), encoded) if lower else encoded


def _b64(text: str, *, urlsafe: bool = False) -> str:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    return encode(text.encode()).decode()


ECHOES = {
    "verbatim": KEY,
    "json, slash escaped": json.dumps(KEY)[1:-1].replace("/", "\\/"),
    "json, \\u escapes": KEY.translate({47: "\\u002f", 43: "\\u002B", 61: "\\u003d"}),
    "json inside json": json.dumps(json.dumps(KEY).replace("/", "\\/"))[1:-1],
    "url-encoded": _pct(KEY),
    "url-encoded, lower-case hex": _pct(KEY, lower=True),
    "url-encoded twice": urllib.parse.quote(_pct(KEY), safe=""),
    "form-encoded": urllib.parse.quote_plus(KEY),
    "html references": KEY.replace("/", "&#x2F;").replace("+", "&#43;").replace("=", "&equals;"),
    "base64 of the key": _b64(KEY),
    "basic credential user:key": _b64("user:" + KEY),
    "basic credential :key": _b64(":" + KEY),
    "basic credential ab:key, url-safe": _b64("ab:" + KEY, urlsafe=True),
    "basic credential key:": _b64(KEY + ":"),
    "base64, url-encoded": _pct(_b64("user:" + KEY)),
}


def _leaks(text: str, secret: str) -> list[str]:
    """Every run of 6 characters of the secret (or of its base64) still readable in `text`."""
    plain = [secret, _b64(secret)] + [_b64(p + secret)[len(p) + 2 :] for p in ("u:", ":")]
    found = []
    for form in plain:
        for i in range(len(form) - 5):
            piece = form[i : i + 6]
            if piece in text or piece in urllib.parse.unquote(text):
                found.append(piece)
    return found


@pytest.mark.req("CFG-PROV-08", "CFG-SECRETS-14")
@pytest.mark.parametrize("echo", list(ECHOES.values()), ids=list(ECHOES))
def test_a_secret_is_redacted_in_every_encoding_a_server_echoes(echo: str) -> None:
    """CFG-PROV-08 / CFG-SECRETS-14: JSON escapes (`\\/`, `\\u002f`), URL encoding (`%2F`,
    `%2b`, `%3D`, either case) and base64 (a key sent in a Basic credential) all go."""
    text = f'{{"error": "invalid credential <{echo}> for this project"}}'
    scrubbed = redact_secrets(text, [KEY])
    assert "[REDACTED]" in scrubbed
    assert scrubbed.startswith('{"error": "invalid credential <')
    assert scrubbed.endswith('> for this project"}')
    assert _leaks(scrubbed, KEY) == []


@pytest.mark.req("CFG-PROV-08", "CFG-SECRETS-14")
def test_a_basic_header_value_is_redacted_encoded_decoded_and_by_its_password() -> None:
    """A configured `Authorization: Basic …` header: the header, the credential alone, the
    decoded `user:password` and the password are all secrets."""
    password = "p/ss+w=rd-123"
    header = "Basic " + _b64("alice:" + password)
    text = f"got {header}; token {header[6:]}; user alice:{password}; pw {_pct(password)}"
    assert redact_secrets(text, [header]) == (
        "got [REDACTED]; token [REDACTED]; user [REDACTED]; pw [REDACTED]"
    )


@pytest.mark.req("CFG-PROV-08")
def test_secret_redaction_leaves_other_text_and_empty_secrets_alone() -> None:
    text = "HTTP 401: key Zk3y rejected; see https://example.com/a%2Fb?x=1"
    assert redact_secrets(text, ["", KEY]) == text
    assert redact_secrets(text, []) == text
    assert redact_secrets("team blue", ["blue"]) == "team [REDACTED]"
