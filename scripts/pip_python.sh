#!/usr/bin/env bash
# Prints the interpreter python.pip_install builds a virtual environment with: the first python3
# on PATH that is not Debian's /usr/bin/python3 (e.g. pyenv's), the user's case `pip install .`
# is for; else Debian's. The path printed is the interpreter itself (not a pyenv shim).
set -euo pipefail
debian="$(readlink -f /usr/bin/python3 2>/dev/null || true)"
chosen=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [[ -x "$d/python3" ]] || continue
  exe="$("$d/python3" -c 'import sys; print(sys.executable)' 2>/dev/null)" || continue
  [[ -n "$exe" ]] || continue
  [[ -z "$chosen" ]] && chosen="$exe"  # the first working one, if all are Debian's
  if [[ "$(readlink -f "$exe")" != "$debian" ]]; then
    chosen="$exe"
    break
  fi
done
[[ -n "$chosen" ]] || chosen=/usr/bin/python3
echo "$chosen"
