#!/usr/bin/env bash
# Debian packages the test suite uses: chromium (browser test, driven by Playwright through
# executable_path) and wamerican (/usr/share/dict/words, the embedded model's quality check).
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ -f /usr/share/dict/words ] || need+=(wamerican)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}"
fi
