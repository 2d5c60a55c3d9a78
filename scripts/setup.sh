#!/usr/bin/env bash
# Sets up everything the demo ("demo") or the test suite ("test") needs. Idempotent:
# installs missing Debian packages (when run as root), creates .venv with the exact pins of
# requirements.txt, compiles the translations, resolves Apache RocketMQ and builds the traffic
# harness with Maven, and fetches Keycloak (tests, and the demo with DEMO_SSO).
set -euo pipefail
cd "$(dirname "$0")/.."
purpose=${1:-demo}

missing=()
command -v java >/dev/null || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null || missing+=(maven)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v msgfmt >/dev/null || missing+=(gettext)  # compilemessages (the Chinese interface)
if [ "$purpose" = test ]; then
  [ -x /usr/bin/chromium ] || missing+=(chromium)
  # a CJK font (the smallest: 1.6 MB): without one chromium prints a Chinese PDF report as boxes
  [ -n "$(fc-list :lang=zh 2>/dev/null)" ] || missing+=(fonts-wqy-microhei)
  command -v pdftotext >/dev/null || missing+=(poppler-utils)  # the PDF report tests read the PDFs
  command -v promtool >/dev/null || missing+=(prometheus)  # the metrics tests scrape and check rules
  command -v prometheus-alertmanager >/dev/null || missing+=(prometheus-alertmanager)  # the alert tests deliver to it
  command -v systemd-analyze >/dev/null || missing+=(systemd)  # the deploy/systemd units are verified
  command -v initdb >/dev/null || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || missing+=(postgresql)
  # the image and chart tests: build with buildah, run with podman (runc; catatonit for pods) on a
  # Debian base made by debootstrap (devstack/containers.py)
  for tool in buildah podman runc debootstrap catatonit; do command -v $tool >/dev/null || missing+=($tool); done
fi
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "Installing ${missing[*]} ..."
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "Please install these packages first: ${missing[*]}" >&2
    echo "  sudo apt-get install ${missing[*]}" >&2
    exit 1
  fi
fi

python=""
for candidate in python3.11 python3; do
  if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    python=$candidate
    break
  fi
done
if [ -z "$python" ]; then
  echo "Python 3.11 is required (python3.11 on PATH)." >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$python" -m venv .venv
wanted=$(sha256sum requirements.txt | cut -d' ' -f1)
if [ "$(cat .venv/.requirements.sha256 2>/dev/null)" != "$wanted" ]; then
  echo "Installing the pinned Python packages ..."
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
  echo "$wanted" > .venv/.requirements.sha256
fi

# the translations (locale/*/LC_MESSAGES/*.po) compiled to the .mo files Django reads; the .mo
# files are build output, not kept in git
DEBUG=true .venv/bin/python manage.py compilemessages --ignore=.venv --ignore=.cache -v 0

# RocketMQ 5.3.3 jars and the harness jar, cached under .cache/ (offline after the first run)
.venv/bin/python -c "from devstack.runtime import ensure_runtime; ensure_runtime()"

# Keycloak 26.5.6 (the identity provider of the single sign-on tests and `demo --sso`), cached
# under .cache/ too: fetched, unpacked and prepared for development mode once
if [ "$purpose" = test ] || [ -n "${DEMO_SSO:-}" ]; then
  .venv/bin/python -c "from devstack.keycloak import ensure_keycloak; ensure_keycloak()"
fi
