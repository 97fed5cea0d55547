"""Credential scrubbing (ACP-UPD-12, Table 5-5) and token redaction (POL-TOOL-06)."""

from __future__ import annotations

import pytest

from zeroclaw_ref.core.ids import SequentialIds
from zeroclaw_ref.core.scrub import clean_output, redact_tokens, scrub_credentials

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
