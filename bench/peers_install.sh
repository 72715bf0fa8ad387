# Sourced by bench/rl_peers.sh and bench/decode_peers.sh: installs pinned benchmark peers for
# Debian's /usr/bin/python3 into folders of their own, with --no-deps so that every module they
# import is pinned in their requirements files.
py=/usr/bin/python3
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

# Installs requirements file $1 into folder $2 unless the same file was installed there already
# ($CMAKE_ARGS reaches the packages built from source).
install() {
  local stamp="$2/.requirements.txt"
  if [ -f "$stamp" ] && cmp -s "$1" "$stamp"; then return; fi
  echo "installing $1 into $2" >&2
  $SUDO rm -rf "$2"
  $SUDO env PIP_BREAK_SYSTEM_PACKAGES=1 CMAKE_ARGS="${CMAKE_ARGS:-}" CMAKE_BUILD_PARALLEL_LEVEL=2 \
    "$py" -m pip install -q --no-deps --ignore-requires-python --disable-pip-version-check \
    --root-user-action=ignore --target "$2" -r "$1"
  $SUDO cp "$1" "$stamp"
}

# Prints the folder of the CUDA torch of `scripts/setup.sh --cuda` (it runs on the CPU), or fails.
torch_prefix() {
  local torch
  torch="$(bash "$root/scripts/torch_prefix.sh")"
  if [ ! -d "$torch/torch" ]; then
    echo "no PyTorch in $torch: run scripts/setup.sh --cuda first (it runs on the CPU)" >&2
    return 1
  fi
  echo "$torch"
}
