#!/bin/sh
# Install a Debian package when the command it provides is missing.
# Usage: ensure_debian_package.sh <command-or-path> <package>
# Idempotent; as root, or through sudo. Prints the command's version, and fails when the command is still
# missing after the install or does not run. Another apt or dpkg at work (unattended upgrades, a second
# `make test`) is waited for, up to ORBCHAIN_APT_LOCK_SECONDS (default 600), instead of failing the run.
set -eu
COMMAND="$1"
PACKAGE="$2"
LOCK_SECONDS="${ORBCHAIN_APT_LOCK_SECONDS:-600}"

# apt-get install waits for dpkg's locks itself (DPkg::Lock::Timeout); apt-get update takes
# /var/lib/apt/lists/lock, which that option does not cover (apt 2.6), so a held lock is waited out here.
update_lists() {
    deadline=$(($(date +%s) + LOCK_SECONDS))
    while ! output=$($SUDO apt-get -o DPkg::Lock::Timeout="$LOCK_SECONDS" update -qq 2>&1); do
        case "$output" in
            *"Could not get lock"*) ;;
            *) printf '%s\n' "$output" >&2; return 1 ;;
        esac
        if [ "$(date +%s)" -ge "$deadline" ]; then
            printf '%s\n' "$output" >&2
            return 1
        fi
        echo "ensure: another apt holds its lock; waiting" >&2
        sleep 1
    done
}

if ! command -v "$COMMAND" >/dev/null 2>&1; then
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=""
    elif command -v sudo >/dev/null 2>&1; then
        SUDO="sudo"
    else
        echo "ensure: $COMMAND is missing and neither root nor sudo is available to install $PACKAGE" >&2
        exit 1
    fi
    echo "ensure: installing $PACKAGE (apt-get)" >&2
    update_lists || exit 1
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$LOCK_SECONDS" install -y -qq \
        "$PACKAGE" >/dev/null
    if ! command -v "$COMMAND" >/dev/null 2>&1; then
        echo "ensure: $PACKAGE was installed but $COMMAND is still missing" >&2
        exit 1
    fi
fi
# The version line shows the command runs. Captured, never piped into head: sh has no pipefail, so a
# pipeline's status is head's and a command that fails would pass unseen.
if VERSION=$("$COMMAND" --version 2>/dev/null) || VERSION=$("$COMMAND" -version 2>&1); then
    printf '%s\n' "$VERSION" | head -n 1
else
    echo "ensure: $COMMAND ($PACKAGE) does not run: neither --version nor -version succeeded" >&2
    exit 1
fi
