#!/usr/bin/env bash
# Debian packages the test suite uses: chromium (browser test, driven by Playwright through
# executable_path), fonts-wqy-microhei (a CJK font, so screenshots of the 中文 page show glyphs)
# and wamerican (/usr/share/dict/words, the embedded model's quality check).
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ -f /usr/share/dict/words ] || need+=(wamerican)
dpkg -s fonts-wqy-microhei >/dev/null 2>&1 || need+=(fonts-wqy-microhei)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need[@]}"
fi
