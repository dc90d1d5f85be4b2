"""The reason an admin API error carries: one line, whatever body the server sent."""

from __future__ import annotations

from harness.admin_api import REASON_CHARS, server_reason

JETTY_404 = """<html>
<head>
<title>Error 404 Not Found</title>
</head>
<body><h2>HTTP ERROR 404 Not Found</h2>
</body>
</html>
"""


def test_pulsars_json_reason_is_kept() -> None:
    assert server_reason('{"reason": "Namespace does not exist"}', "Not Found") == (
        "Namespace does not exist")


def test_an_html_error_page_is_its_status_phrase() -> None:
    assert server_reason(JETTY_404, "Not Found") == "Not Found"
    assert server_reason("", "Bad Gateway") == "Bad Gateway"


def test_plain_text_gives_its_first_line_shortened() -> None:
    assert server_reason("no such topic\nat line 2", "Not Found") == "no such topic"
    long = server_reason("x" * 1000, "Not Found")
    assert long == "x" * REASON_CHARS + "..."


def test_json_without_a_reason_is_plain_text() -> None:
    assert server_reason('["a", "b"]', "Conflict") == '["a", "b"]'
