"""HS256 tokens as Pulsar's `pulsar tokens create` makes them: what verifies, what not."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.security.conftest import SECRET
from wire.tokens import InvalidToken, mint, verify


def test_a_minted_token_proves_its_subject() -> None:
    assert verify(SECRET, mint(SECRET, "app")) == "app"


def test_expiry_is_honoured() -> None:
    token = mint(SECRET, "app", expires_at=1000)
    assert verify(SECRET, token, now=999) == "app"
    with pytest.raises(InvalidToken, match="expired"):
        verify(SECRET, token, now=1000)


def test_an_unsigned_token_is_refused() -> None:
    """The `alg: none` trick: a token with its signature dropped."""
    header = base64.urlsafe_b64encode(json.dumps({"alg": "none"}).encode()).rstrip(b"=")
    payload = mint(SECRET, "admin").split(".")[1]
    with pytest.raises(InvalidToken, match="algorithm"):
        verify(SECRET, f"{header.decode()}.{payload}.")


def test_a_changed_subject_breaks_the_signature() -> None:
    header, _payload, signature = mint(SECRET, "app").split(".")
    forged = base64.urlsafe_b64encode(b'{"sub":"admin"}').rstrip(b"=").decode()
    with pytest.raises(InvalidToken, match="signature"):
        verify(SECRET, f"{header}.{forged}.{signature}")


def test_the_command_line_makes_a_key_and_a_token_the_broker_accepts(tmp_path: Path) -> None:
    key = tmp_path / "secret.key"
    subprocess.run([sys.executable, "-m", "impl.security", "create-secret-key",
                    "--output", str(key)], check=True)
    token = subprocess.run([sys.executable, "-m", "impl.security", "create",
                            "--secret-key", str(key), "--subject", "app"],
                           check=True, capture_output=True, text=True).stdout.strip()
    assert verify(key.read_bytes(), token) == "app"
