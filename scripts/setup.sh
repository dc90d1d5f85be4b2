#!/usr/bin/env bash
# Idempotent set-up used by both README commands: Debian packages, the project's .venv with
# its pinned dependencies, and a running Docker engine. Every step says what it did; a
# failing step stops the script with the reason.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$repo/.venv"
say() { printf 'setup: %s\n' "$*"; }
fail() { printf 'setup: FAILED: %s\n' "$*" >&2; exit 1; }

# --- Debian packages -------------------------------------------------------------------
# package -> a file whose presence shows it is installed (dpkg -s is slow on big systems)
declare -A wanted=(
    [zookeeper]=/usr/share/java/zookeeper.jar
    [docker.io]=/usr/sbin/dockerd
    [iptables]=/usr/sbin/iptables
    [openjdk-17-jre-headless]=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
    [procps]=/usr/bin/pgrep
    [chromium]=/usr/bin/chromium
    [maven]=/usr/share/maven/bin/mvn
)
missing=()
for pkg in "${!wanted[@]}"; do
    if [ ! -e "${wanted[$pkg]}" ] && ! dpkg -s "$pkg" >/dev/null 2>&1; then missing+=("$pkg"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || fail "missing Debian packages (${missing[*]}) and not root: install them with apt-get"
    say "installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || fail "apt-get update failed"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || fail "apt-get install ${missing[*]} failed"
else
    say "Debian packages present: ${!wanted[*]}"
fi
command -v java >/dev/null || fail "no java on PATH after installing openjdk-17-jre-headless"

# --- Python environment ----------------------------------------------------------------
stamp="$venv/.starquake-installed"
want=$(sha256sum "$repo/pyproject.toml" | cut -d' ' -f1)
if [ ! -x "$venv/bin/python" ]; then
    say "creating $venv"
    python3 -m venv "$venv" || fail "python3 -m venv failed (is python3-venv installed?)"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing the project and its pinned dependencies into .venv (pip)"
    piplog="$venv/pip-install.log"
    { "$venv/bin/python" -m pip install --upgrade pip \
        && "$venv/bin/python" -m pip install -e "$repo[dev]"; } >"$piplog" 2>&1 \
        || { tail -n 20 "$piplog" >&2; fail "pip install -e .[dev] failed; full log: $piplog"; }
    echo "$want" > "$stamp"
else
    say ".venv up to date with pyproject.toml"
fi

# --- Docker engine ---------------------------------------------------------------------
if docker info >/dev/null 2>&1; then
    say "Docker engine answers"
else
    [ "$(id -u)" = 0 ] || fail "no Docker engine answers and not root: start dockerd yourself"
    log=/var/log/starquake-dockerd.log
    say "starting dockerd (log: $log)"
    # setsid: the engine outlives this script and the shell that ran it.
    setsid dockerd >"$log" 2>&1 < /dev/null &
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
    docker info >/dev/null 2>&1 || fail "dockerd did not answer within 60 s; see $log"
    say "Docker engine answers"
fi
say "done"
