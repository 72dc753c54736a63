#!/usr/bin/env bash
# The identity providers the single sign-on tests sign in at (tests/sso_idps.py), both on loopback:
# panva's oidc-provider from npm (tests/idp/package-lock.json; installed again only when it changes) and
# Debian's xmlsec1, which pysaml2's SAML IdP signs with (installed here when missing, like chromium).
set -euo pipefail
cd "$(dirname "$0")/../tests/idp"
if command -v npm >/dev/null 2>&1; then
  stamp=node_modules/.rb-installed
  want=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "==> installing the test OpenID Connect provider (npm ci)"
    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
    echo "$want" > "$stamp"
  fi
else
  echo "npm not found: the OpenID Connect sign-in tests will fail (install Node.js 20+)" >&2
fi
if command -v xmlsec1 >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
  echo "xmlsec1 is missing and cannot be installed without root; install Debian's 'xmlsec1' package" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "==> installing Debian's xmlsec1 for the SAML sign-in tests"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends xmlsec1 >/dev/null
