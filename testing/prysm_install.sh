#!/usr/bin/env bash
# Installs Prysm v7.0.0 (beacon-chain, validator, prysmctl) from the Go module proxy into
# $PRYSM_DIR (default ~/.cache/gigagas/prysm-v7.0.0), outside the repository, and prints the
# folder of the binaries. Idempotent: an installed version is reused. The proxy serves a module
# only when its version is named (no @latest, no version lists), hence the pin.
set -euo pipefail
VERSION=v7.0.0
DEST=${PRYSM_DIR:-$HOME/.cache/gigagas/prysm-$VERSION}
BIN="$DEST/bin"
if [ -x "$BIN/beacon-chain" ] && [ -x "$BIN/validator" ] && [ -x "$BIN/prysmctl" ]; then
    echo "$BIN"
    exit 0
fi
command -v go >/dev/null || { echo "prysm_install: Go is required" >&2; exit 1; }
echo "prysm_install: downloading github.com/OffchainLabs/prysm/v7@$VERSION" >&2
SRC=$(go mod download -json "github.com/OffchainLabs/prysm/v7@$VERSION" \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')
rm -rf "$DEST/src"
mkdir -p "$DEST/src" "$BIN"
cp -r "$SRC/." "$DEST/src/"
chmod -R u+w "$DEST/src"
echo "prysm_install: building beacon-chain, validator, prysmctl (a few minutes)" >&2
(cd "$DEST/src" && go build -o "$BIN/" ./cmd/beacon-chain ./cmd/validator ./cmd/prysmctl)
echo "$BIN"
