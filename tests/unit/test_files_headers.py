"""The files routes' pure parts: which media types an upload may have, and the download's
``Content-Disposition`` (an ASCII fallback and the exact name, RFC 5987)."""

from __future__ import annotations

from urllib.parse import unquote

import pytest

from grove_api.files import attachment
from grove_contracts.files import ACCEPTED_MEDIA_TYPES, media_type_of


@pytest.mark.parametrize("media", ACCEPTED_MEDIA_TYPES)
def test_each_accepted_type_passes_with_parameters_and_any_case(media: str) -> None:
    assert media_type_of(media) == media
    assert media_type_of(f"{media.upper()}; charset=utf-8") == media


@pytest.mark.parametrize(
    "content_type", [None, "", "text/csv", "image/svg+xml", "text/html+x", "application/pdfx"]
)
def test_other_types_are_refused(content_type: str | None) -> None:
    assert media_type_of(content_type) is None


def test_the_download_name_is_exact_in_rfc_5987_with_an_ascii_fallback() -> None:
    name = 'Runbook "prod" \u2013 été/2026;.pdf'
    header = attachment(name)
    fallback, encoded = header.removeprefix("attachment; ").split("; ", 1)
    assert fallback == 'filename="Runbook _prod_ _ _t__2026_.pdf"'
    assert encoded.startswith("filename*=UTF-8''")
    value = encoded.removeprefix("filename*=UTF-8''")
    assert unquote(value) == name
    assert not set(value) & set(' "/;\\')  # nothing that could end or split the header
