"""TLS on both ports, with a self-signed certificate made by `openssl`: the official
client over `pulsar+ssl://` trusting it, and the admin API over `https://`."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Iterator

import pulsar
import pytest
import requests
from aiohttp import web

from impl.security.config import SecurityConfig
from impl.security.guard import Guard
from tests.broker.conftest import MemoryBroker, serving


@pytest.fixture(scope="module")
def tls_config(tmp_path_factory: pytest.TempPathFactory) -> SecurityConfig:
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "broker.cert.pem", directory / "broker.key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return SecurityConfig(tls_cert_file=str(cert), tls_key_file=str(key))


@pytest.fixture(scope="module")
def tls_broker(tls_config: SecurityConfig) -> Iterator[MemoryBroker]:
    with serving(guard=Guard(tls_config)) as broker:
        yield broker


def test_the_official_client_produces_and_consumes_over_tls(
        tls_broker: MemoryBroker, tls_config: SecurityConfig) -> None:
    assert tls_broker.url.startswith("pulsar+ssl://")
    client = pulsar.Client(tls_broker.url, operation_timeout_seconds=5,
                           tls_trust_certs_file_path=tls_config.tls_cert_file,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe("tls-topic", "s")
        client.create_producer("tls-topic").send(b"sealed")
        assert consumer.receive(5000).data() == b"sealed"
    finally:
        client.close()


def test_a_client_that_does_not_trust_the_certificate_cannot_connect(
        tls_broker: MemoryBroker) -> None:
    client = pulsar.Client(tls_broker.url, operation_timeout_seconds=2,
                           tls_allow_insecure_connection=False,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer("tls-topic")
    finally:
        client.close()


def test_the_admin_port_speaks_https(tls_config: SecurityConfig) -> None:
    async def main() -> None:
        app = web.Application()
        app.router.add_get("/ping", _pong)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls_config.server_ssl_context())
        await site.start()
        port = runner.addresses[0][1]
        try:
            answer = await asyncio.to_thread(requests.get, f"https://127.0.0.1:{port}/ping",
                                             verify=tls_config.tls_cert_file, timeout=5)
            assert answer.text == "pong"
            with pytest.raises(requests.exceptions.SSLError):
                await asyncio.to_thread(requests.get, f"https://127.0.0.1:{port}/ping",
                                        timeout=5)
        finally:
            await runner.cleanup()
    asyncio.run(main())


async def _pong(_request: web.Request) -> web.Response:
    return web.Response(text="pong")
