#!/usr/bin/env bash
# Builds one Slurm release from a Debian suite's source package (slurm-wlm) on bookworm and installs it under the
# cache, so that the select and SPANK plugins can be built against its configured tree and the integration tests
# can run its daemons. Usage:
#   fetch-slurm-debian.sh SUITE DEBIAN_VERSION     e.g.  trixie 24.11.5-4+deb13u1   or   sid 26.05.5-1
# Prints the cache entry as the LAST line of stdout; in it:
#   src/       the configured and built source tree (headers, config.h) for RACKWISE_SLURM_<series>_SRC
#   prefix/    the installed Slurm (sbin/slurmctld, sbin/slurmd, bin/sbatch, lib/slurm/...)
#
# The entry is keyed on the tarball's SHA-256 and the configure flags, under the release series (major.minor):
#   ${RACKWISE_CACHE:-$HOME/.cache/rackwise}/slurm-<series>/<sha256-of(tarball sha256 + flags)>
# so a site that needs its exact micro release passes that Debian version and gets an entry of its own. The
# deb-src entry for SUITE lives in its own file in a private apt state directory (the system's apt configuration
# is not touched), derived from this machine's Debian entry; it is removed afterwards. apt may deliver only the
# upstream tarball and exit non-zero (the .dsc and the Debian tarball are not always served): the tarball is
# checked against the SHA-256 that `apt-cache showsrc` lists, not against apt's exit code; where the archive does
# not serve it, RACKWISE_SLURM_ORIG_TARBALL=FILE supplies a copy, checked the same way. Progress goes to
# stderr. Cold: about 4 minutes on 2 cores per release (configure + make -j2 + install).
set -euo pipefail
source "$(dirname "$0")/apt-private.sh"  # also log, die, cache_root, pkg
(($# == 2)) || die "usage: $(basename "$0") SUITE DEBIAN_VERSION (e.g. sid 26.05.5-1)"
suite=$1 want_version=$2
[[ $suite =~ ^[a-z][a-z0-9-]*$ ]] || die "suite '$suite' is not a Debian suite name"
upstream=${want_version%-*}
upstream=${upstream#*:}  # an epoch is not part of the tarball's name
[[ $upstream =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)$ ]] || die "version '$want_version' is not <major>.<minor>.<micro>-<debian revision>"
series=${BASH_REMATCH[1]}.${BASH_REMATCH[2]}
jobs=${RACKWISE_SLURM_JOBS:-2}
# --disable-static halves the build; --enable-multiple-slurmd lets the tests run many slurmd on one host.
configure_flags=(--disable-debug --enable-multiple-slurmd --disable-static)

base=$cache_root/slurm-$series
mkdir -p "$base"
exec 9>"$base/.lock"
flock 9  # two builds at once wait for each other

# --- the tarball ------------------------------------------------------------------------------------------
dl=$base/download/$want_version
tarball=$dl/${pkg}_${upstream}.orig.tar.gz
sum_file=$dl/orig.sha256
if [[ ! -f $sum_file ]] || ! (cd "$dl" && sha256sum --quiet -c "$sum_file" >/dev/null 2>&1); then
  mkdir -p "$dl"
  apt_dir=$(mktemp -d "$base/apt.XXXXXX")
  trap 'rm -rf "$apt_dir"' EXIT
  mkdir -p "$apt_dir/sources.list.d" "$apt_dir/lists/partial" "$apt_dir/archives/partial"
  : >"$apt_dir/sources.list"
  # The machine's own Debian entry (archive and keyring), as deb-src for SUITE, in its own file.
  src_entry=""
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] || continue
    src_entry=$(awk -v RS= '/Suites:[^\n]*bookworm( |$|\n)/ && !/security/ {print; exit}' "$f")
    [[ -n $src_entry ]] && break
  done
  [[ -n $src_entry ]] || die "no Debian bookworm entry in /etc/apt/sources.list.d/*.sources to derive $suite's from"
  sed -E -e 's/^Types:.*$/Types: deb-src/' -e "s/^Suites:.*\$/Suites: $suite/" -e 's/^Components:.*$/Components: main/' \
    <<<"$src_entry" >"$apt_dir/sources.list.d/rackwise-$suite-src.sources"
  rw_apt_private_opts "$apt_dir"
  log "apt-get update (deb-src $suite, private state in $apt_dir)"
  apt-get "${apt_opts[@]}" -q update >&2 || die "apt-get update for $suite's deb-src failed"
  # The paragraph of exactly this version; its Checksums-Sha256 line for the upstream tarball.
  want_sum=$(apt-cache "${apt_opts[@]}" showsrc "$pkg" 2>/dev/null |
    awk -v v="$want_version" '/^Package:/ {mine=0} $1 == "Version:" {mine = ($2 == v)}
      /^Checksums-Sha256:/ {on=1; next} /^[^ ]/ {on=0}
      mine && on && !found && $3 ~ /orig\.tar\.gz$/ {print $1; found=1}')  # reads to the end: no SIGPIPE
  [[ $want_sum =~ ^[0-9a-f]{64}$ ]] || die "apt-cache showsrc lists no orig.tar.gz SHA-256 for $pkg=$want_version"
  if [[ -n ${RACKWISE_SLURM_ORIG_TARBALL:-} ]]; then
    # A copy of the same upstream tarball obtained another way (an archive mirror that serves it, a site's own
    # copy): it must still be the file the suite lists, byte for byte.
    [[ -f $RACKWISE_SLURM_ORIG_TARBALL ]] || die "RACKWISE_SLURM_ORIG_TARBALL=$RACKWISE_SLURM_ORIG_TARBALL: no such file"
    log "using $RACKWISE_SLURM_ORIG_TARBALL (checked against $suite's listed SHA-256 below)"
    cp "$RACKWISE_SLURM_ORIG_TARBALL" "$tarball"
  else
    log "apt-get source --download-only $pkg=$want_version (a non-zero exit is judged by the checksum below)"
    (cd "$dl" && apt-get "${apt_opts[@]}" -q source --download-only "$pkg=$want_version" >&2) ||
      log "apt-get source exited non-zero; checking what arrived"
  fi
  rm -rf "$apt_dir"
  trap - EXIT
  [[ -f $tarball ]] || die "$(basename "$tarball") did not arrive: $suite lists it but the archive did not serve it;" \
    "set RACKWISE_SLURM_ORIG_TARBALL to a copy of it (checked against the listed SHA-256)"
  echo "$want_sum  $(basename "$tarball")" >"$sum_file.new"
  (cd "$dl" && sha256sum --quiet -c "$sum_file.new" >&2) || { rm -f "$tarball" "$sum_file.new"; die "checksum mismatch"; }
  mv "$sum_file.new" "$sum_file"
fi
tar_sum=$(cut -d' ' -f1 "$sum_file")

# --- configure, build, install ----------------------------------------------------------------------------
key=$(printf '%s\n' "$tar_sum" "${configure_flags[@]}" | sha256sum | cut -c1-16)
entry=$base/$key
if [[ -f $entry/.ready ]]; then
  log "cached: $entry"
  echo "$entry"
  exit 0
fi
rm -rf "$entry"
mkdir -p "$entry"
log "unpacking $(basename "$tarball")"
tar -xzf "$tarball" -C "$entry"
mv "$entry"/slurm-"$upstream"* "$entry/src" 2>/dev/null || mv "$entry"/slurm-* "$entry/src"
start=$SECONDS
log "configure ${configure_flags[*]}"
(cd "$entry/src" && ./configure --prefix="$entry/prefix" --sysconfdir="$entry/prefix/etc" "${configure_flags[@]}" \
  >"$entry/configure.log" 2>&1) || die "configure failed, see $entry/configure.log"
log "make -j$jobs (about 3 minutes on 2 cores)"
(cd "$entry/src" && make -j"$jobs" >"$entry/make.log" 2>&1) || die "make failed, see $entry/make.log"
(cd "$entry/src" && make install >"$entry/install.log" 2>&1) || die "make install failed, see $entry/install.log"
[[ -x $entry/prefix/sbin/slurmctld && -f $entry/prefix/lib/slurm/select_cons_tres.so ]] ||
  die "the install in $entry/prefix has no slurmctld or select_cons_tres.so"
IFS=. read -r v_major v_minor v_micro <<<"$upstream"
want_num=$(printf '0x%02x%02x%02x' "$((10#$v_major))" "$((10#$v_minor))" "$((10#$v_micro))")
got_num=$(sed -n 's/^#define SLURM_VERSION_NUMBER \(0x[0-9a-fA-F]*\).*/\1/p' "$entry/src/slurm/slurm_version.h")
[[ -n $got_num && $((got_num)) -eq $((want_num)) ]] || die "built Slurm version ${got_num:-?}, expected $upstream ($want_num)"
log "built Slurm $upstream in $((SECONDS - start)) s"
echo "$want_version" >"$entry/.ready"
echo "$entry"
