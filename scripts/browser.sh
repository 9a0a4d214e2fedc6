#!/usr/bin/env bash
# Make sure a headless-capable Chromium from the OS packages is installed, for the web UI
# tests (Playwright drives it through executable_path; nothing is downloaded by Playwright).
#   scripts/browser.sh          -> installs Debian's chromium if /usr/bin/chromium is missing
# Idempotent: does nothing when the browser is there. Needs root (or sudo) to install.
# Prints the browser's path on success.
set -euo pipefail
browser="${CURSOR_AGENT_API_CHROMIUM:-/usr/bin/chromium}"
if [ -x "$browser" ]; then
  echo "$browser"
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "browser.sh: $browser is missing and apt-get is not available; install Chromium" \
       "and set CURSOR_AGENT_API_CHROMIUM to its path" >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
  else
    echo "browser.sh: installing chromium needs root (or sudo)" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >&2
$sudo apt-get install -y -qq chromium >&2
if [ ! -x "$browser" ]; then
  echo "browser.sh: chromium was installed but $browser is not there" >&2
  exit 1
fi
echo "$browser"
