#!/usr/bin/env bash
# The example configuration in deploy/slurm/ is accepted by a real slurmctld with select/rackwise_cons_tres:
# its rackwise.yaml agrees with its slurm.conf (88 GPU nodes, a login node without GPUs) and the plugin loads
# it. Only slurmctld runs (no slurmd): site-specific settings (munge, cgroups, paths) are swapped for the
# test's; nodes, partitions and the scheduling settings are the example's own.
here=$(cd "$(dirname "$0")" && pwd)
deploy=$(cd "$here/../../../deploy/slurm" && pwd)
source "$here/lib.sh"
rw_require
# rw_expand handles one bracket group; the example has "nvl0[1-4]-t[01-18]".
rw_expand_all() {
  local h
  for h in $(rw_expand "$1"); do
    if [[ $h == *\[* ]]; then rw_expand_all "$h"; else echo "$h"; fi
  done
}
# A one-node cluster gives us the temp dir, ports and test settings; then the example's nodes replace it.
printf 'racks:\n  - name: x\n    nodes: placeholder\n' >"/tmp/rw-deploy-$$.yaml"
rw_setup select/rackwise_cons_tres "/tmp/rw-deploy-$$.yaml"
rm -f "/tmp/rw-deploy-$$.yaml"
conf=$SLURM_CONF
grep -v -E '^(NodeName|PartitionName)=' "$conf" >"$conf.test"
grep -E '^(NodeName|PartitionName|SelectType|SelectTypeParameters|GresTypes|SchedulerParameters)=' "$deploy/slurm.conf" |
  sed 's/#.*//' | while read -r line; do
    if [[ $line =~ ^NodeName=([^[:space:]]+) ]]; then
      # The example's host names do not resolve here: every node gets 127.0.0.1 (slurmctld checks at start).
      count=$(rw_expand_all "${BASH_REMATCH[1]}" | wc -l)
      addrs=$(yes 127.0.0.1 | head -n "$count" | paste -sd,)
      line="$line NodeAddr=$addrs"
    fi
    echo "$line"
  done >>"$conf.test"
# Later lines win in slurm.conf for scalar keys; node and partition lines come from the example only.
mv "$conf.test" "$conf"
cp "$deploy/rackwise.yaml" "$RW_TMP/etc/rackwise.yaml"
# gres.conf: the example's lines, with device files pointed at fake ones.
sed "s|/dev/nvidia|$RW_TMP/fakedev/nvidia|" "$deploy/gres.conf" >"$RW_TMP/etc/gres.conf"
if rw_start_ctld; then
  grep -q 'rackwise: loaded .*rackwise.yaml: 88 nodes, 20 NVLink domains, 8 racks, 3 power domains' "$RW_TMP/log/slurmctld.log" &&
    rw_ok "deploy/slurm: $(grep -o 'rackwise: loaded .*' "$RW_TMP/log/slurmctld.log" | head -1)" ||
    rw_fail "deploy/slurm: no load message: $(grep rackwise "$RW_TMP/log/slurmctld.log" | tail -3)"
  [[ $(sinfo -h -o %D -p all) -eq 88 ]] && rw_ok "sinfo sees the example's 88 GPU nodes" || rw_fail "sinfo"
else
  rw_fail "slurmctld refused the example configuration: $(grep -i 'rackwise\|fatal' "$RW_TMP/log/slurmctld.log" | tail -3)"
fi
rw_log "$RW_FAILS failure(s)"
exit $((RW_FAILS > 0))
