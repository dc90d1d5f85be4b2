"""Apache Pulsar's configuration files as the distribution ships them, with our settings
applied: the way Pulsar's own container scripts apply settings from the environment
(`apply-config-from-env.py`): a key the file sets is rewritten in place, a key it lacks is
appended. Everything we do not name keeps the distribution's default."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def with_settings(template: str, settings: Mapping[str, str]) -> str:
    """`template` (a Java properties file) with each of `settings` set: an uncommented
    `key=...` line is replaced, the keys no line sets are added at the end."""
    lines, seen = [], set()
    for line in template.splitlines():
        key, sep, _ = line.partition("=")
        key = key.strip()
        if sep and not line.lstrip().startswith("#") and key in settings:
            if key in seen:
                continue  # set once, where the file first sets it
            line = f"{key}={settings[key]}"
            seen.add(key)
        lines.append(line)
    missing = [f"{key}={value}" for key, value in settings.items() if key not in seen]
    if missing:
        lines += ["", "# Set by starquake (harness/targets/apache_pulsar/node_specs.py).",
                  *missing]
    return "\n".join(lines) + "\n"


def rendered(home: Path, name: str, settings: Mapping[str, str]) -> str:
    """The distribution's `conf/<name>` with `settings`."""
    return with_settings((home / "conf" / name).read_text(), settings)
