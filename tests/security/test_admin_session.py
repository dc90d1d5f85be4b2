"""The admin session keeps the bearer token across a redirect to another broker (another
port), where plain `requests` drops it: without it a split redirected to the controller's
leader, or a Segments API call redirected to the segment's owner, arrives unauthenticated."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from wire.admin_session import ClusterAdminSession
from wire.tokens import bearer_header


class _Broker(BaseHTTPRequestHandler):
    """Answers 307 to `leader` when one is set, else with the Authorization it got."""

    leader = ""

    def do_POST(self) -> None:
        if self.leader:
            self.send_response(307)
            self.send_header("Location", self.leader + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.headers.get("Authorization", "none").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _serve(leader: str) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 type("Broker", (_Broker,), {"leader": leader}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def redirecting_broker() -> Iterator[str]:
    """The URL of a broker that redirects every request to another on its own port."""
    leader = _serve("")
    follower = _serve(f"http://127.0.0.1:{leader.server_address[1]}")
    yield f"http://127.0.0.1:{follower.server_address[1]}"
    for server in (follower, leader):
        server.shutdown()
        server.server_close()


def test_the_token_follows_a_redirect_to_another_broker(redirecting_broker: str) -> None:
    url = f"{redirecting_broker}/admin/v2/scalable/t/ns/x/split/0"
    assert requests.post(url, headers=bearer_header("tok"), timeout=5).text == "none"
    assert ClusterAdminSession.with_token("tok").post(url, timeout=5).text == "Bearer tok"
