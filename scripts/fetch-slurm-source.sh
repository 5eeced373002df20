#!/usr/bin/env bash
# Fetches the Debian source of the installed Slurm (apt-get source slurm-wlm=<installed version>), runs
# ./configure once, and prints the configured source directory as the LAST line of stdout. The select plugin
# needs Slurm's internal headers plus the generated config.h / slurm_version.h, which no binary package ships.
#
# Idempotent and cached under ${RACKWISE_CACHE:-$HOME/.cache/rackwise}/slurm-src/<version>. The deb-src entry
# is derived from this machine's own Debian entry (/etc/apt/sources.list.d/debian.sources, or
# /etc/apt/sources.list), kept in a private apt state directory inside the cache: the system's apt
# configuration is not touched and no repository host is written into the project.
#
# Progress and tool output go to stderr; stdout carries only the final directory.
set -euo pipefail
source "$(dirname "$0")/apt-private.sh"  # also log, die, cache_root, pkg

version=$(dpkg-query -W -f='${Version}' slurmctld 2>/dev/null || true)
[[ -n $version ]] || version=$(dpkg-query -W -f='${Version}' libslurm-dev 2>/dev/null || true)
[[ -n $version ]] || die "no Slurm package installed (slurmctld or libslurm-dev); run scripts/install-deps.sh"
command -v dpkg-source >/dev/null || die "dpkg-source missing (apt-get install dpkg-dev)"

work=$cache_root/slurm-src/$version
stamp=$work/.configured
if [[ -f $stamp ]]; then
  src=$(cat "$stamp")
  if [[ -f $src/config.h && -f $src/src/slurmctld/slurmctld.h ]]; then
    log "cached: $src"
    echo "$src"
    exit 0
  fi
  rm -f "$stamp"
fi
mkdir -p "$work"
exec 9>"$work/.lock"
flock 9   # two builds fetching at once wait for each other instead of clobbering the tree

# Another process may have finished while we waited for the lock.
if [[ -f $stamp ]]; then src=$(cat "$stamp"); echo "$src"; exit 0; fi

# Private apt configuration with deb-src entries derived from the system's deb entries.
apt_dir=$work/apt
mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/archives/partial"
: >"$apt_dir/sources.list"
found=0
for f in /etc/apt/sources.list.d/*.sources; do
  [[ -f $f ]] || continue
  sed -E 's/^Types:.*$/Types: deb-src/' "$f" >"$apt_dir/sources.list.d/$(basename "$f")"
  found=1
done
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
  [[ -f $f ]] || continue
  grep -E '^[[:space:]]*deb[[:space:]]' "$f" | sed -E 's/^[[:space:]]*deb[[:space:]]/deb-src /' \
    >>"$apt_dir/sources.list" || true
  [[ -s $apt_dir/sources.list ]] && found=1
done
((found)) || die "no Debian apt source found in /etc/apt to derive a deb-src entry from"

rw_apt_private_opts "$apt_dir"
log "apt-get update (deb-src, private state in $apt_dir)"
apt-get "${apt_opts[@]}" -q update >&2 || die "apt-get update for deb-src failed"

dl=$work/download
mkdir -p "$dl"
if ! ls "$dl"/${pkg}_*.dsc >/dev/null 2>&1; then
  log "apt-get source $pkg=$version"
  (cd "$dl" && apt-get "${apt_opts[@]}" -q source --download-only "$pkg=$version" >&2) ||
    die "apt-get source $pkg=$version failed (is the version still in the archive?)"
fi
dsc=$(ls "$dl"/${pkg}_*.dsc | head -1)
upstream=${version%-*}
src=$work/slurm-wlm-$upstream
if [[ ! -f $src/configure ]]; then
  rm -rf "$src"
  log "unpacking $dsc"
  dpkg-source --no-check -x "$dsc" "$src" >&2 || die "dpkg-source -x failed"
fi

if [[ ! -f $src/config.h ]]; then
  log "running ./configure (about 2 minutes)"
  (cd "$src" && ./configure --prefix=/usr --sysconfdir=/etc/slurm --enable-multiple-slurmd \
     >"$work/configure.log" 2>&1) || die "configure failed, see $work/configure.log"
fi
[[ -f $src/config.h && -f $src/slurm/slurm_version.h ]] || die "configure produced no config.h in $src"

# The headers must match the installed daemons exactly (plugin_version is checked at load time).
want=$(dpkg-query -W -f='${Version}' slurmctld 2>/dev/null || echo "$version")
IFS=. read -r w_major w_minor w_micro <<<"${want%%-*}"
want_num=$(printf '0x%02x%02x%02x' "$((10#$w_major))" "$((10#$w_minor))" "$((10#${w_micro%%[!0-9]*}))")
got_num=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' "$src/slurm/slurm_version.h")
[[ $((want_num)) -eq $((got_num)) ]] ||
  die "configured source is Slurm version $got_num but the installed Slurm is $want ($want_num)"

echo "$src" >"$stamp"
log "ready: $src"
echo "$src"
