#!/usr/bin/env bash
# Makes sure Debian's headless-capable Chromium is at /usr/bin/chromium for the docs browser tests.
#
# The tests drive this system browser through Playwright's executable_path;
# they never download a browser build of their own.
set -euo pipefail

if [[ -x /usr/bin/chromium ]]; then
    exit 0
fi

if [[ "$(id -u)" != "0" ]]; then
    echo "ensure_chromium: /usr/bin/chromium is missing; as root run: apt-get update && apt-get install -y chromium" >&2
    # 77: the caller's usual code for "cannot run here", so tests skip instead of failing.
    exit 77
fi

export DEBIAN_FRONTEND=noninteractive
# A fresh machine has no package lists yet, so the install alone finds nothing.
if ! apt-get install -y -qq chromium >/dev/null 2>&1; then
    apt-get update -qq
    apt-get install -y -qq chromium >/dev/null
fi

if [[ ! -x /usr/bin/chromium ]]; then
    echo "ensure_chromium: apt-get finished but /usr/bin/chromium is still missing" >&2
    exit 1
fi
echo "ensure_chromium: installed $(/usr/bin/chromium --version 2>/dev/null | head -n1)"
