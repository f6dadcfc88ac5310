"""How the worker's poller decides a buffered request is whole, too large, or still coming."""

from __future__ import annotations

import pytest

from webhook.prefetch import MAX_HEAD_BYTES, Progress, RequestScan

LIMIT = 1000
HEAD = b"POST /validate HTTP/1.1\r\nHost: x\r\n"


def scan_all(*pieces: bytes) -> list[Progress]:
    """Feed the pieces one after another, as reads would deliver them; the state after each."""
    scan, buffer, states = RequestScan(LIMIT), bytearray(), []
    for piece in pieces:
        buffer += piece
        states.append(scan.progress(buffer))
    return states


def test_a_content_length_body_is_complete_only_once_every_byte_is_in() -> None:
    states = scan_all(HEAD, b"Content-Length: 5\r\n\r\n", b"ab", b"cde")
    assert states == [Progress.MORE, Progress.MORE, Progress.MORE, Progress.COMPLETE]


def test_a_request_without_a_body_is_complete_at_the_end_of_its_head() -> None:
    assert scan_all(b"GET /healthz HTTP/1.1\r\n", b"Host: x\r\n\r\n") == [Progress.MORE, Progress.COMPLETE]


def test_a_chunked_body_is_complete_after_its_last_chunk_and_trailers() -> None:
    head = HEAD + b"Transfer-Encoding: chunked\r\n\r\n"
    assert scan_all(head, b"3\r\nabc\r\n", b"2;ext=1\r\nde\r\n", b"0\r\n", b"\r\n")[-2:] == [
        Progress.MORE,
        Progress.COMPLETE,
    ]
    assert scan_all(head + b"1\r\na\r\n0\r\nX-T: 1\r\n", b"\r\n") == [Progress.MORE, Progress.COMPLETE]


@pytest.mark.parametrize(
    "pieces",
    [
        (HEAD + b"Content-Length: 1001\r\n\r\n",),  # declared over the limit: refused before the body
        (HEAD + b"Transfer-Encoding: chunked\r\n\r\n", b"3e8\r\n" + b"x" * 1000 + b"\r\n", b"1\r\n"),
        (b"POST / HTTP/1.1\r\nX: " + b"y" * MAX_HEAD_BYTES,),  # a head that never ends
    ],
)
def test_over_the_limits_is_too_large_as_soon_as_it_shows(pieces: tuple[bytes, ...]) -> None:
    assert scan_all(*pieces)[-1] is Progress.TOO_LARGE


def test_the_body_size_to_reserve_is_known_from_the_head() -> None:
    scan = RequestScan(LIMIT)
    assert scan.body_size() is None
    scan.progress(HEAD + b"Content-Length: 7\r\n\r\n")
    assert scan.body_size() == 7 and scan.complete_at() == len(HEAD) + 21 + 7
    chunked = RequestScan(LIMIT)
    chunked.progress(HEAD + b"Transfer-Encoding: chunked\r\n\r\n")
    assert chunked.body_size() == LIMIT and chunked.complete_at() is None
