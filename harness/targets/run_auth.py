"""Authentication on the clusters starquake starts (a scenario's `[topology] auth =
"token"`): per run, a fresh token secret key and ZooKeeper digest credentials. Brokers
require tokens signed with the key and grant a superuser role everything; the lookup
service (tenant migration) checks the same tokens and takes changes from the superuser
only; bookies take requests only from a client presenting the superuser's token (the
brokers); brokers, bookies and the lookup service authenticate to ZooKeeper, whose nodes they
create only they may read or change; the harness presents the superuser's token
(harness/credentials.py) to its workloads, admin driver and nemesis, and so do the brokers
when they are clients themselves (their replicators in the other clusters, their admin
requests to each other).

Each node reads the credentials from files its flags name; the `local_*_args` methods
write them, readable by their owner only, for processes on this machine."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from harness.credentials import Credentials
from harness.topology import Topology
from wire.tokens import mint

SUPERUSER_ROLE = "starquake"
UNPRIVILEGED_ROLE = "starquake-unprivileged"
"""Granted nothing: what the auth probes show a known role is still refused."""
SECRET_KEY_FILE = "token-secret.key"
BROKER_CLIENT_TOKEN_FILE = "broker-client.token"
DIGEST_FILE = "zookeeper-digest"
METADATA_USER = "starquake"


@dataclass(frozen=True)
class RunAuth:
    secret: str
    """The token key, as the text its file holds (brokers sign with the file's bytes)."""
    metadata_digest: str = ""
    """`user:password` for ZooKeeper; empty: ZooKeeper stays open (`world:anyone`)."""

    def credentials(self) -> Credentials:
        key = self.secret.encode()
        return Credentials(mint(key, SUPERUSER_ROLE), mint(key, UNPRIVILEGED_ROLE))

    def broker_files(self) -> dict[str, str]:
        """What the broker's token flags name, by file name: the key, and the superuser's
        token the broker presents as a client (every cluster of the run shares the key,
        so each takes the others' brokers as superusers)."""
        return {SECRET_KEY_FILE: self.secret,
                BROKER_CLIENT_TOKEN_FILE: self.credentials().token}

    def broker_args(self, directory: str) -> tuple[str, ...]:
        """The broker's token flags, given the directory where its node finds
        `broker_files`."""
        return ("--authentication-enabled", "--authorization-enabled",
                "--token-secret-key", f"{directory}/{SECRET_KEY_FILE}",
                "--superuser-roles", SUPERUSER_ROLE,
                "--broker-client-token-file", f"{directory}/{BROKER_CLIENT_TOKEN_FILE}")

    def bookie_files(self) -> dict[str, str]:
        """What the bookie's token flags name, by file name: the key it checks tokens
        with (brokers present the superuser's token)."""
        return {SECRET_KEY_FILE: self.secret}

    @staticmethod
    def bookie_args(directory: str) -> tuple[str, ...]:
        """The bookie's token flags: only the brokers' role may use it."""
        return ("--token-secret-key", f"{directory}/{SECRET_KEY_FILE}",
                "--client-roles", SUPERUSER_ROLE)

    def local_bookie_args(self, directory: Path) -> tuple[str, ...]:
        """Write `bookie_files` into `directory`; the flags that name them."""
        _write_private(directory, self.bookie_files())
        return self.bookie_args(str(directory))

    def local_broker_args(self, directory: Path) -> tuple[str, ...]:
        """Write `broker_files` into `directory` (brokers on this machine read them there);
        the flags that name them."""
        _write_private(directory, self.broker_files())
        return self.broker_args(str(directory))

    @staticmethod
    def metadata_args(digest_path: str) -> tuple[str, ...]:
        """A broker's, bookie's or lookup service's ZooKeeper credentials flag."""
        return ("--metadata-digest-file", digest_path)

    def local_metadata_args(self, directory: Path) -> tuple[str, ...]:
        """Write the digest file into `directory`; the flag that names it, none while
        ZooKeeper stays open."""
        if not self.metadata_digest:
            return ()
        _write_private(directory, {DIGEST_FILE: self.metadata_digest})
        return self.metadata_args(str(directory / DIGEST_FILE))

    def local_lookup_args(self, directory: Path) -> tuple[str, ...]:
        """Write the lookup service's files into `directory`; its flags: tokens checked
        with the run's key, changes by the superuser only, the brokers' client token for
        its migrations' admin requests, the ZooKeeper credentials."""
        _write_private(directory, self.broker_files())
        return ("--token-secret-key", str(directory / SECRET_KEY_FILE),
                "--superuser-roles", SUPERUSER_ROLE,
                "--broker-client-token-file", str(directory / BROKER_CLIENT_TOKEN_FILE),
                *self.local_metadata_args(directory))


def _write_private(directory: Path, files: dict[str, str]) -> None:
    """Write each file's text, readable by its owner only: they hold the run's secrets."""
    for name, text in files.items():
        path = directory / name
        path.touch(mode=0o600)
        path.write_text(text)


def run_auth(topology: Topology) -> RunAuth | None:
    """The run's authentication, or None when the topology has none."""
    if topology.auth != "token":
        return None
    return RunAuth(secrets.token_hex(32), f"{METADATA_USER}:{secrets.token_hex(16)}")
