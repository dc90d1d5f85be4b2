"""Admin changes reach the broker a topic is assigned to through Pulsar's redirects: a
broker that is not the load manager's leader sends a request for an unowned topic to the
leader, and the leader sends it on marked `authoritative=true`; asked directly without
that mark, the assignee sends it back to the leader."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.workloads.stats import REDIRECTS, owner_request

PATH = "/admin/v2/persistent/public/default/t"


class Broker:
    """One broker's admin port: it redirects every change not marked authoritative to
    `redirect` (marking it when `marks`), and takes (records the body of) the others."""

    def __init__(self) -> None:
        self.redirect: str | None = None
        self.marks = False
        self.taken: list[bytes] = []
        broker = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                authoritative = "authoritative=true" in self.path
                if broker.redirect is not None and not authoritative:
                    self.send_response(307)
                    mark = "?authoritative=true" if broker.marks else ""
                    self.send_header("Location", broker.redirect + self.path + mark)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                broker.taken.append(body)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def brokers() -> Iterator[tuple[Broker, Broker]]:
    leader, assignee = Broker(), Broker()
    yield leader, assignee
    for broker in (leader, assignee):
        broker.server.shutdown()
        broker.server.server_close()


def test_a_change_follows_the_leaders_redirect_to_the_assignee(
        brokers: tuple[Broker, Broker]) -> None:
    leader, assignee = brokers
    # The leader assigns the topic to `assignee` and says so; the assignee, asked without
    # the mark, sends the request back to the leader.
    leader.redirect, leader.marks = assignee.url, True
    assignee.redirect = leader.url
    owner_request([assignee.url, leader.url], "PUT", PATH, {"k": 1})
    assert assignee.taken == [b'{"k": 1}'] and leader.taken == []


def test_redirects_without_end_are_given_up(brokers: tuple[Broker, Broker]) -> None:
    first, second = brokers
    first.redirect, second.redirect = second.url, first.url  # never authoritative
    with pytest.raises(OSError, match=f"no broker took PUT {PATH}"):
        owner_request([first.url, second.url], "PUT", PATH)
    assert REDIRECTS >= 2
