#!/usr/bin/env bash
# Installs the three client libraries of testing/rpc_clients into a cache folder outside the
# repository (default ~/.cache/gigagas/rpc-clients, or $GIGAGAS_RPC_CLIENTS):
#   venv/          a Python virtualenv with web3.py 7.14.1 (PyPI)
#   node_modules/  ethers 6.17.0 and viem 2.57.20 (npm), run by node.js (>= 18)
# node.js and npm come from Debian when missing (apt-get, as root or with sudo). Each part is
# skipped when it is already there at the pinned version. Prints the folder on its last line.
# `--web3py-only` installs the virtualenv alone.
set -euo pipefail

WEB3_VERSION=7.14.1
ETHERS_VERSION=6.17.0
VIEM_VERSION=2.57.20

DIR=${GIGAGAS_RPC_CLIENTS:-$HOME/.cache/gigagas/rpc-clients}
mkdir -p "$DIR"

log() { echo "rpc-clients: $*" >&2; }

# `--web3py-only`: the Python library alone (what `make test`'s short run needs).
WEB3PY_ONLY=0
if [ "${1:-}" = "--web3py-only" ]; then WEB3PY_ONLY=1; fi

# web3.py in its own virtualenv.
if ! "$DIR/venv/bin/python" -c "import web3, sys; sys.exit(web3.__version__ != '$WEB3_VERSION')" 2>/dev/null; then
    log "web3.py $WEB3_VERSION into $DIR/venv"
    test -x "$DIR/venv/bin/python" || python3 -m venv "$DIR/venv"
    "$DIR/venv/bin/pip" install -q --disable-pip-version-check "web3==$WEB3_VERSION" >&2
fi
if [ $WEB3PY_ONLY = 1 ]; then
    log "web3.py $("$DIR/venv/bin/python" -c 'import web3; print(web3.__version__)')"
    echo "$DIR"
    exit 0
fi

# node.js and npm.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    log "node.js/npm missing: installing Debian's nodejs and npm"
    SUDO=""
    if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq nodejs npm >&2
fi
NODE_MAJOR=$(node -p 'process.versions.node.split(".")[0]')
if [ "$NODE_MAJOR" -lt 18 ]; then
    echo "rpc-clients: node.js $(node --version) is too old (ethers 6 and viem 2 need >= 18)" >&2
    exit 1
fi

# ethers and viem in one npm folder (exact versions, no lock-file drift).
have() { node -p "require('$DIR/node_modules/$1/package.json').version" 2>/dev/null || true; }
if [ "$(have ethers)" != "$ETHERS_VERSION" ] || [ "$(have viem)" != "$VIEM_VERSION" ]; then
    log "ethers $ETHERS_VERSION and viem $VIEM_VERSION into $DIR/node_modules"
    cat > "$DIR/package.json" <<JSON
{
  "name": "gigagas-rpc-clients",
  "private": true,
  "description": "client libraries for gigagas testing/rpc_clients (installed by its install.sh)",
  "dependencies": {
    "ethers": "$ETHERS_VERSION",
    "viem": "$VIEM_VERSION"
  }
}
JSON
    (cd "$DIR" && npm install --no-audit --no-fund --loglevel=error --save-exact >&2)
fi

log "web3.py $("$DIR/venv/bin/python" -c 'import web3; print(web3.__version__)'), ethers $(have ethers), viem $(have viem), node $(node --version)"
echo "$DIR"
