#!/usr/bin/env bash
# Prints where scripts/setup.sh downloads the wheels of requirements-pip.txt ($TEMPO_WHEELS_PREFIX,
# else a fixed folder); python.pip_install installs from there with --no-index.
set -euo pipefail
echo "${TEMPO_WHEELS_PREFIX:-/opt/tempo-deps/wheels}"
