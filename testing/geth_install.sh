#!/usr/bin/env bash
# Installs geth, evm and devp2p v1.17.10 (go-ethereum's cmd/geth, cmd/evm and cmd/devp2p, whose
# `rlpx eth-test|snap-test|snap2-test` are the conformance suites hive runs) from the Go module
# proxy into $GETH_DIR (default ~/.cache/gigagas/geth-v1.17.10), outside the repository, and
# prints the folder of the binaries. Idempotent: an installed version is reused. The proxy serves a
# module only when its version is named (no @latest), hence the pin.
set -euo pipefail
VERSION=v1.17.10
DEST=${GETH_DIR:-$HOME/.cache/gigagas/geth-$VERSION}
BIN="$DEST/bin"
if [ -x "$BIN/geth" ] && [ -x "$BIN/evm" ] && [ -x "$BIN/devp2p" ]; then
    echo "$BIN"
    exit 0
fi
command -v go >/dev/null || { echo "geth_install: Go is required" >&2; exit 1; }
mkdir -p "$BIN"
echo "geth_install: building github.com/ethereum/go-ethereum/cmd/{geth,evm,devp2p}@$VERSION (a few minutes)" >&2
GOBIN="$BIN" go install "github.com/ethereum/go-ethereum/cmd/geth@$VERSION" \
    "github.com/ethereum/go-ethereum/cmd/evm@$VERSION" \
    "github.com/ethereum/go-ethereum/cmd/devp2p@$VERSION"
echo "$BIN"
