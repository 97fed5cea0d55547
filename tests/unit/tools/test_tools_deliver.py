"""`deliver_file` and `verify_delivery` (acp.md §9 ACP-DELIV-01..09, -13..15; POL-FILE-09)."""

from __future__ import annotations

import hashlib
import mimetypes
from pathlib import Path

import pytest
from fs_world import World, run

from zeroclaw_ref.core.jsontypes import JSON, JSONObject
from zeroclaw_ref.tools import deliver_file
from zeroclaw_ref.tools.base import ARTIFACT_KEY, ToolResult
from zeroclaw_ref.tools.deliver_file import DeliverFile, mime_type, verify_delivery

PDF = b"%PDF-1.4 demo\n"  # the 14-byte report of the acp.md §9 example
PDF_URI = (
    "attachment://deliver/a067b8f914e0041e3b175210af1b96f8ba548252a43fd97475030ed6aa5dc473.pdf"
)


def deliver(world: World, arguments: JSON) -> ToolResult:
    return run(DeliverFile(world.security), arguments)


def artifact_of(result: ToolResult) -> JSONObject:
    assert result.data is not None
    artifact = result.data[ARTIFACT_KEY]
    assert isinstance(artifact, dict)
    return artifact


@pytest.mark.req("ACP-DELIV-04", "ACP-DELIV-05", "ACP-DELIV-07", "ACP-DELIV-08", "POL-FILE-09")
def test_the_example_pdf_is_delivered_as_a_content_addressed_copy(ws_world: World) -> None:
    (ws_world.ws / "report.pdf").write_bytes(PDF)
    result = deliver(ws_world, {"path": "report.pdf", "title": "Quarterly report"})
    assert result.output == f"Delivered report.pdf (14 bytes)\nuri={PDF_URI}"
    copy = ws_world.ws / "uploads" / PDF_URI.removeprefix("attachment://deliver/")
    assert artifact_of(result) == {
        "uri": PDF_URI,
        "path": str(copy),
        "filename": "report.pdf",
        "title": "Quarterly report",
        "mimeType": "application/pdf",
        "bytes": 14,
    }
    assert copy.read_bytes() == PDF
    assert verify_delivery(artifact_of(result)) == PDF


@pytest.mark.req("ACP-DELIV-04")
def test_an_identical_redelivery_reuses_the_copy(ws_world: World) -> None:
    (ws_world.ws / "report.pdf").write_bytes(PDF)
    first = artifact_of(deliver(ws_world, {"path": "report.pdf"}))
    inode = Path(str(first["path"])).stat().st_ino
    (ws_world.ws / "again.PDF").write_bytes(PDF)
    second = artifact_of(deliver(ws_world, {"path": "again.PDF"}))
    assert second["uri"] == first["uri"]  # the extension is lower-cased
    assert Path(str(second["path"])).stat().st_ino == inode
    assert sorted(p.name for p in (ws_world.ws / "uploads").iterdir()) == [
        PDF_URI.removeprefix("attachment://deliver/")
    ]


@pytest.mark.req("ACP-DELIV-05", "ACP-DELIV-07")
def test_the_uri_never_comes_from_the_title_and_names_without_extension(ws_world: World) -> None:
    (ws_world.ws / "README").write_bytes(b"plain")
    result = deliver(ws_world, {"path": "README", "title": "evil.exe"})
    digest = hashlib.sha256(b"plain").hexdigest()
    artifact = artifact_of(result)
    assert artifact["uri"] == f"attachment://deliver/{digest}"
    assert artifact["title"] == "evil.exe"
    assert artifact["mimeType"] == "application/octet-stream"
    assert (ws_world.ws / "uploads" / digest).read_bytes() == b"plain"


@pytest.mark.req("ACP-DELIV-07")
@pytest.mark.parametrize(
    ("name", "title", "filename", "shown_title"),
    [
        ("a\x01b.txt", None, "ab.txt", "ab.txt"),
        ("r.txt", "  \x07Quarterly\n report ", "r.txt", "Quarterly report"),
        ("r.txt", " \x1b ", "r.txt", "r.txt"),
        ("r.txt", 5, "r.txt", "r.txt"),
        ("\x01\x02", None, "file", "file"),
        (" spaced.txt ", None, "spaced.txt", "spaced.txt"),
    ],
)
def test_display_filename_and_title(
    ws_world: World, name: str, title: JSON, filename: str, shown_title: str
) -> None:
    (ws_world.ws / name).write_bytes(b"x")
    arguments: JSONObject = {"path": name}
    if title is not None:
        arguments["title"] = title
    artifact = artifact_of(deliver(ws_world, arguments))
    assert (artifact["filename"], artifact["title"]) == (filename, shown_title)


MIMES = [
    (None, "a.csv", "text/csv"),
    (None, "a.HTML", "text/html"),
    (None, "a.htm", "text/html"),
    (None, "a.svg", "image/svg+xml"),
    (None, "a.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    (None, "a.pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
    (None, "a.zip", "application/zip"),
    (None, "a.png", "image/png"),
    (None, "a.JPG", "image/jpeg"),
    (None, "a.md", "text/markdown"),
    (None, "a.json", "application/json"),
    (None, "a.docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    (" text/x-custom ", "a.pdf", "text/x-custom"),
    ("   ", "a.pdf", "application/pdf"),
    ("text/\x01bad", "a.pdf", "application/pdf"),
    (7, "a.pdf", "application/pdf"),
    (None, "noext", "application/octet-stream"),
    (None, "a.zz9unknown", "application/octet-stream"),
]


@pytest.mark.req("ACP-DELIV-06")
@pytest.mark.parametrize(("declared", "name", "expected"), MIMES)
def test_mime_rules(declared: JSON, name: str, expected: str) -> None:
    assert mime_type(declared, name) == expected


@pytest.mark.req("ACP-DELIV-06")
def test_the_system_database_is_consulted_after_the_tables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def guess(name: str, strict: bool = True) -> tuple[str | None, str | None]:
        return ("audio/x-system", None)

    monkeypatch.setattr(mimetypes, "guess_type", guess)
    assert mime_type(None, "a.wavish") == "audio/x-system"
    assert mime_type(None, "a.pdf") == "application/pdf"


@pytest.mark.req("ACP-DELIV-02", "ACP-DELIV-03")
def test_failure_texts_in_order(ws_world: World) -> None:
    ws = ws_world.ws
    (ws / "dir").mkdir()
    with (ws / "big.bin").open("wb") as handle:
        handle.truncate(10_485_761)
    with (ws / "limit.bin").open("wb") as handle:
        handle.truncate(10_485_760)
    outside_missing = str(ws_world.outside / "missing.txt")
    cases: list[tuple[JSON, str]] = [
        ({}, "Missing 'path' parameter"),
        ({"path": 1}, "Missing 'path' parameter"),
        ({"path": "a\x00b"}, "Path not allowed: contains null byte"),
        ({"path": "../x"}, "Path not allowed by security policy: ../x"),
        ({"path": "missing.txt"}, "Failed to resolve file path: No such file or directory"),
        # a missing file is reported before the policy decision
        ({"path": outside_missing}, "Failed to resolve file path: No such file or directory"),
        ({"path": str(ws_world.secret_file)}, ws_world.refusal(str(ws_world.secret_file))),
        ({"path": "dir"}, "Not a file"),
        ({"path": "/dev/null"}, "Not a file"),
        ({"path": "big.bin"}, "File too large: 10485761 bytes (limit: 10485760 bytes)"),
    ]
    for arguments, text in cases:
        result = deliver(ws_world, arguments)
        assert (result.success, result.error, result.data) == (False, text, None)
    assert deliver(ws_world, {"path": "limit.bin"}).success


@pytest.mark.req("ACP-DELIV-04")
def test_a_linked_uploads_directory_fails_the_materialisation(ws_world: World) -> None:
    (ws_world.ws / "report.pdf").write_bytes(PDF)
    (ws_world.ws / "uploads").symlink_to(ws_world.outside)
    result = deliver(ws_world, {"path": "report.pdf"})
    assert result.error == (
        "Failed to materialize delivery: uploads path is a symlink; refusing to materialize blob"
    )
    assert sorted(p.name for p in ws_world.outside.iterdir()) == ["secret.txt"]


@pytest.mark.req("ACP-DELIV-09", "ACP-LOAD-11")
def test_verify_delivery_refuses_a_changed_swapped_or_missing_copy(ws_world: World) -> None:
    (ws_world.ws / "report.pdf").write_bytes(PDF)
    artifact = artifact_of(deliver(ws_world, {"path": "report.pdf"}))
    copy = Path(str(artifact["path"]))
    assert verify_delivery(artifact) == PDF
    copy.write_bytes(b"%PDF-1.4 evil\n")
    assert verify_delivery(artifact) is None
    copy.unlink()
    twin = ws_world.ws / "twin.pdf"
    twin.write_bytes(PDF)
    copy.symlink_to(twin)  # identical bytes, but behind a link: never followed
    assert verify_delivery(artifact) is None
    copy.unlink()
    assert verify_delivery(artifact) is None


@pytest.mark.req("ACP-DELIV-09")
def test_verify_delivery_needs_a_matching_content_addressed_name(ws_world: World) -> None:
    (ws_world.ws / "report.pdf").write_bytes(PDF)
    artifact = artifact_of(deliver(ws_world, {"path": "report.pdf"}))
    copy = Path(str(artifact["path"]))
    renamed = copy.with_name(copy.name.removesuffix(".pdf") + ".txt")
    copy.rename(renamed)
    assert verify_delivery({**artifact, "path": str(renamed)}) is None
    assert verify_delivery({**artifact, "uri": PDF_URI.removesuffix(".pdf")}) is None
    assert verify_delivery({**artifact, "path": "relative/name.pdf"}) is None
    assert verify_delivery({"uri": PDF_URI}) is None
    assert verify_delivery("not an artifact") is None
    secret = str(ws_world.secret_file)
    assert verify_delivery({"uri": PDF_URI, "path": secret}) is None


@pytest.mark.req("ACP-DELIV-09")
def test_verify_delivery_refuses_an_oversized_copy(ws_world: World) -> None:
    data = b"x" * 10_485_761
    digest = hashlib.sha256(data).hexdigest()
    (ws_world.ws / "uploads").mkdir()
    (ws_world.ws / "uploads" / digest).write_bytes(data)
    artifact: JSONObject = {
        "uri": f"attachment://deliver/{digest}",
        "path": str(ws_world.ws / "uploads" / digest),
    }
    assert verify_delivery(artifact) is None


@pytest.mark.req("ACP-DELIV-01", "ACP-DELIV-15", "POL-FILE-09")
def test_spec_and_class(ws_world: World) -> None:
    tool = DeliverFile(ws_world.security)
    assert (tool.name, tool.act) == ("deliver_file", False)
    assert tool.description == deliver_file.DESCRIPTION
    assert tool.description.startswith("Deliver a file from the workspace to the user's client")
    assert 'fileId="..."' in tool.description and "uri=attachment://deliver/..." in tool.description
    assert tool.parameters["required"] == ["path"]
    properties = tool.parameters["properties"]
    assert isinstance(properties, dict) and sorted(properties) == ["mimeType", "path", "title"]
