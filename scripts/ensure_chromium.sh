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

# Tests run side by side, and each process that needs the browser may get here: one installs, the
# others wait for it and find the browser there. apt-get itself waits for a lock another apt holds.
exec 9>"${TMPDIR:-/tmp}/budgetlab-ensure-chromium.lock"
flock 9
if [[ -x /usr/bin/chromium ]]; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -o DPkg::Lock::Timeout=600)
# A fresh machine has no package lists yet, so the install alone finds nothing.
if ! "${APT[@]}" install -y -qq chromium >/dev/null 2>&1; then
    "${APT[@]}" update -qq
    "${APT[@]}" install -y -qq chromium >/dev/null
fi

if [[ ! -x /usr/bin/chromium ]]; then
    echo "ensure_chromium: apt-get finished but /usr/bin/chromium is still missing" >&2
    exit 1
fi
echo "ensure_chromium: installed $(/usr/bin/chromium --version 2>/dev/null | head -n1)"
