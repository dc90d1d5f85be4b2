"""The token tool behind `python -m impl.security`: make a secret key and mint tokens for
roles, as Pulsar's `pulsar tokens create-secret-key` and `pulsar tokens create` do."""

from __future__ import annotations

import argparse
import secrets
import sys
import time

from wire.tokens import mint, read_secret_key

SECRET_KEY_BYTES = 32
"""256 bits: HS256's own strength."""


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m impl.security")
    commands = parser.add_subparsers(dest="command", required=True)
    key = commands.add_parser("create-secret-key", help="write a new random secret key")
    key.add_argument("--output", required=True)
    token = commands.add_parser("create", help="print a token for a role")
    token.add_argument("--secret-key", required=True, help="the secret key file")
    token.add_argument("--subject", required=True, help="the role the token proves")
    token.add_argument("--expiry-time-seconds", type=int, default=None,
                       help="valid for this long from now (default: no expiry)")
    args = parser.parse_args(argv)
    if args.command == "create-secret-key":
        with open(args.output, "wb") as file:
            file.write(secrets.token_bytes(SECRET_KEY_BYTES))
        return
    expires_at = (None if args.expiry_time_seconds is None
                  else int(time.time()) + args.expiry_time_seconds)
    sys.stdout.write(mint(read_secret_key(args.secret_key), args.subject, expires_at) + "\n")

