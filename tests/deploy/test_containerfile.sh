#!/usr/bin/env bash
# The Containerfile cannot be built here (no container engine), so its steps are checked instead: every RUN step
# parses as the /bin/sh script it is and passes shellcheck, every Debian package it installs exists in bookworm's
# package lists, every -D option it passes is one the project's CMake declares, and it installs the package
# CPack names rackwise_<version>_amd64.deb.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
file=$root/deploy/k8s/Containerfile
command -v shellcheck >/dev/null || { [[ -n ${CI:-} ]] && { echo "FAIL: shellcheck missing" >&2; exit 1; }; echo "SKIP: shellcheck" >&2; exit 77; }
work=$(mktemp -d /tmp/rackwise-containerfile.XXXXXX)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }

mapfile -t cmake_files < <(find "$root" -name CMakeLists.txt -not -path "$root/build*" -not -path '*/node_modules/*')
# Instructions with their continuation lines joined.
awk '/^[[:space:]]*#/ {next} { if (sub(/\\$/, "")) { buf = buf $0; next } print buf $0; buf = "" }' "$file" >"$work/joined"
n=0
wanted=()
while IFS= read -r line; do
  [[ $line =~ ^RUN[[:space:]]+(.*)$ ]] || continue
  n=$((n + 1))
  printf '#!/bin/sh\n%s\n' "${BASH_REMATCH[1]}" >"$work/run$n.sh"
  sh -n "$work/run$n.sh" || fail "RUN step $n does not parse"
  shellcheck -s sh -e SC2086 "$work/run$n.sh" >&2 || fail "RUN step $n: shellcheck"
  # Debian packages: the words after `apt-get install -y --no-install-recommends`, up to the next `&&`.
  for pkg in $(sed -n 's/.*apt-get install -y --no-install-recommends \([^&]*\).*/\1/p' "$work/run$n.sh"); do
    [[ $pkg == /* || $pkg == ./* ]] && continue  # a local .deb
    wanted+=("$pkg")
  done
  for opt in $(grep -o -- '-DRACKWISE_[A-Z_]*' "$work/run$n.sh" | sort -u); do
    grep -qs -- "${opt#-D}" "${cmake_files[@]}" || fail "RUN step $n passes $opt, which no CMakeLists.txt declares"
  done
done <"$work/joined"
# One apt-cache call for all of them (each call reads the whole package cache).
known=$(apt-cache show --no-all-versions "${wanted[@]}" 2>/dev/null | sed -n 's/^Package: //p' | sort -u)
for pkg in "${wanted[@]}"; do
  grep -qx "$pkg" <<<"$known" || fail "the Containerfile installs '$pkg', which is no Debian package here"
done
((${#wanted[@]} >= 10)) || fail "found only ${#wanted[@]} packages to install"
((n >= 3)) || fail "expected at least 3 RUN steps, found $n"
grep -q 'cpack -G DEB' "$work/joined" || fail "the image is not built from the Debian package"
grep -q 'apt-get install .*rackwise_\*_amd64.deb' "$work/joined" || fail "the runtime stage does not apt-get install the .deb"
grep -q 'CPACK_DEBIAN_FILE_NAME DEB-DEFAULT' "$root/packaging/CMakeLists.txt" || fail "CPack no longer names the package rackwise_<version>_amd64.deb"
((fails == 0)) && echo "ok: $n RUN steps parse, pass shellcheck, install existing packages and known options"
exit $((fails != 0))
