#!/bin/sh
# Install a Debian package when the command it provides is missing.
# Usage: ensure_debian_package.sh <command-or-path> <package>
# Idempotent; as root, or through sudo. Prints the command's version.
set -eu
COMMAND="$1"
PACKAGE="$2"
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
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$PACKAGE" >/dev/null
fi
"$COMMAND" --version 2>/dev/null | head -n 1 || "$COMMAND" -version | head -n 1
