#!/usr/bin/env bash
# The Debian package, as an administrator would use it: cpack builds rackwise_<version>_amd64.deb (and
# rackwise-dbg), `apt-get install ./rackwise_*.deb` installs it, `man rackwise` documents every subcommand,
# the installed CLI works, the installed plugins are stripped with their debug symbols in rackwise-dbg, and a real
# slurmctld loads the INSTALLED select plugin and runs a GPU job with it. The package is removed at the end
# (other Slurm tests put Debian's plugin directory in PluginDir; lib.sh leaves rackwise's files out of it).
# Environment: RW_BUILD_DIR (the CMake build directory, everything built). Needs root.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
RW_PLUGIN_DIR=$RW_DEBIAN_PLUGINS
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (apt-get install)" >&2; exit 77; }
[[ -d ${RW_BUILD_DIR:-} ]] || { echo "FAIL: RW_BUILD_DIR not set" >&2; exit 1; }
command -v cpack >/dev/null || { echo "FAIL: cpack missing" >&2; exit 1; }

work=$(mktemp -d /tmp/rackwise-deb.XXXXXX)
installed=0
remove_package() {
  ((installed)) && DEBIAN_FRONTEND=noninteractive apt-get purge -y -q rackwise >/dev/null 2>&1
  rm -rf "$work"
}
fail_now() { echo "FAIL: $*" >&2; remove_package; exit 1; }

(cd "$work" && cpack -G DEB --config "$RW_BUILD_DIR/CPackConfig.cmake" >cpack.log 2>&1) ||
  { tail -30 "$work/cpack.log" >&2; fail_now "cpack failed"; }
deb=$(ls "$work"/rackwise_*_amd64.deb 2>/dev/null)
dbg=$(ls "$work"/rackwise-dbg_*_amd64.deb 2>/dev/null)
[[ -f $deb && -f $dbg ]] || fail_now "no rackwise_*_amd64.deb and rackwise-dbg_*_amd64.deb in: $(ls "$work")"
echo "ok: built $(basename "$deb") and $(basename "$dbg")"
dpkg-deb -f "$deb" Depends | grep 'libc6' >/dev/null || fail_now "Depends not filled in by shlibdeps: $(dpkg-deb -f "$deb" Depends)"
# The select plugin loads only into the exact Slurm release it was built for: the package breaks every other one.
slurm_release=$(dpkg-query -W -f='${Version}' slurmctld | sed 's/-[^-]*$//')
dpkg-deb -f "$deb" Breaks | grep -F "slurmctld (<< $slurm_release)" >/dev/null ||
  fail_now "Breaks does not hold slurmctld at $slurm_release: $(dpkg-deb -f "$deb" Breaks)"

installed=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$deb" >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log" >&2; fail_now "apt-get install $deb failed"; }
echo "ok: installed with apt-get"

plugins=/usr/lib/x86_64-linux-gnu/slurm-wlm
for f in /usr/bin/rackwise /usr/bin/rackwise-extender $plugins/select_rackwise_cons_tres.so $plugins/spank_rackwise.so \
  $plugins/rackwise-slurm-gpu-power /usr/bin/rackwise-node-agent \
  /usr/lib/systemd/system/rackwise-extender.service /usr/lib/systemd/system/rackwise-slurm-gpu-steer.service \
  /usr/share/man/man1/rackwise.1 /usr/share/man/man5/rackwise.yaml.5 \
  /usr/share/man/man8/rackwise-spank.8 /usr/share/doc/rackwise/examples/demo.yaml \
  /usr/share/doc/rackwise/examples/slurm/slurm.conf; do
  [[ -e $f ]] || fail_now "$f not installed"
done
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' /usr/lib/systemd/system/rackwise-extender.service)
[[ $exec_start == /usr/bin/rackwise-extender && -x $exec_start ]] ||
  fail_now "the systemd unit starts '$exec_start', not the installed /usr/bin/rackwise-extender"
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' /usr/lib/systemd/system/rackwise-slurm-gpu-steer.service)
[[ $exec_start == $plugins/rackwise-slurm-gpu-power && -x $exec_start ]] ||
  fail_now "the steering unit starts '$exec_start', not the installed $plugins/rackwise-slurm-gpu-power"
for f in /usr/bin/rackwise $plugins/select_rackwise_cons_tres.so; do
  readelf -S "$f" | grep '\.debug_info' >/dev/null && fail_now "$f is not stripped"
  readelf -S "$f" | grep '\.gnu_debuglink' >/dev/null || fail_now "$f has no debug link"
done
dpkg-deb -c "$dbg" | grep "usr/lib/debug$plugins/select_rackwise_cons_tres.so.debug" >/dev/null ||
  fail_now "rackwise-dbg lacks the select plugin's debug symbols"
echo "ok: binaries stripped, debug symbols in rackwise-dbg"

man_text=$(MANWIDTH=200 man rackwise 2>/dev/null) || fail_now "man rackwise failed"
for c in $(/usr/bin/rackwise --help | awk '/^commands:/ {on = 1; next} on && NF {print $1}'); do
  grep -q "^ *$c\b" <<<"$man_text" || fail_now "man rackwise does not document '$c'"
done
man -w rackwise.yaml >/dev/null && man -w rackwise-spank >/dev/null || fail_now "man pages 5 and 8 missing"
echo "ok: man rackwise documents every subcommand"
/usr/bin/rackwise validate /usr/share/doc/rackwise/examples/demo.yaml >/dev/null || fail_now "installed CLI cannot validate"

# A real slurmctld with PluginDir = Debian's directory (the installed plugin) + Debian's own plugins.
rw_setup select/rackwise_cons_tres "$here/small_cluster.yaml" || fail_now "setup"
trap 'rc=$?; trap - EXIT; rw_cleanup; remove_package; exit $rc' EXIT
grep -q "^PluginDir=$plugins:" "$SLURM_CONF" || fail_now "PluginDir is not the installed directory"
rw_start || exit 1
grep -q "rackwise: select/rackwise_cons_tres loaded over select/cons_tres" "$RW_TMP/log/slurmctld.log" ||
  rw_fail "slurmctld.log does not show the installed plugin loaded"
job=$(rw_submit -N1 --gres=gpu:8 --nvlink=required -p all)
[[ -n $job ]] || { rw_fail "sbatch refused: $(cat "$RW_TMP/sbatch.err")"; exit 1; }
if rw_wait_state "$job" RUNNING 30; then rw_ok "job $job runs under the installed plugin"; else
  rw_fail "job $job: $(rw_state "$job") $(rw_reason "$job")"; fi
((RW_FAILS == 0))
