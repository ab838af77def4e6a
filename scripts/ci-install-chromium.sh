#!/usr/bin/env bash
# Installs Debian's Chromium for the browser end-to-end tests (npm run test:browser), unless a Chromium is
# already there. No browser download from anywhere but the distribution's package archive.
set -euo pipefail

for candidate in "${CHROMIUM_PATH:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then
    echo "chromium: using $candidate"
    exit 0
  fi
done

if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
echo "chromium: installed $(/usr/bin/chromium --version 2>/dev/null | head -1)"
