#!/usr/bin/env bash
# Prints where scripts/setup.sh installs the reference Python packages of requirements-peers.txt
# ($TEMPO_PEERS_PREFIX, else a fixed folder); it goes on PYTHONPATH for the tests that use them.
set -euo pipefail
echo "${TEMPO_PEERS_PREFIX:-/opt/tempo-deps/peers}"
