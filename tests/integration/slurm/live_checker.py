#!/usr/bin/python3
"""An independent checker of what really runs on a live Slurm cluster under rackwise.

It shares no code with rackwise: it reads the cluster description with PyYAML, applies the power model of the
project's contract (a node draws its type's idle watts; each allocated GPU adds (node_watts - idle_watts) / gpus,
or the watts its job declared; racks sum their nodes, power domains their racks and child domains; nothing may
draw more than its cap less the policy's reserve), and reads what runs from Slurm's own tools
(`scontrol show job -d`), never from the plugin.

  live_checker.py sample DESC JOBS OUT STOP   samples until the file STOP exists; appends one line per finding to
                                              OUT (and "sample N" lines, so a caller can wait for samples)
  live_checker.py domains DESC JOBS SEEN      judges every `required` job's NVLink domains against the fewest the
                                              cluster can give it (every node type of its partition, on the empty
                                              cluster under the described caps)

  live_checker.py locality DESC JOBS SEEN     every job seen running, whatever its locality: its NVLink domains
                                              against the fewest, one line each, then "at fewest A of B"

  live_checker.py victims DESC JOBS BEFORE JOB GONE PREEMPTABLE
                                              whether GONE (the jobs preempted for JOB, a comma list) are as few
                                              of PREEMPTABLE as can make room beside BEFORE ("id node:gpus,..."
                                              per running job)

JOBS has one line per submitted job: `id gpus gpus_per_node watts locality partition_nodes [nodes]` (watts 0: the
type's default; partition_nodes a comma list, or `-` for every node; nodes: the node count the job asked for with
-N, 0 or absent for any, which on a type whose NVLink domain is the node is a floor on the domains). The description may be replaced while sampling
(a lowered cap is re-read each sample; an unreadable file keeps the last good one, as rackwise does).
"""

import math
import os
import re
import subprocess
import sys
import time

import yaml


def expand(hostlist):
    """Expands one bracket group: pre[01-03,07]suf."""
    m = re.match(r"^([^\[]*)\[([^\]]*)\](.*)$", hostlist)
    if not m:
        return [hostlist]
    pre, body, suf = m.groups()
    out = []
    for part in body.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out += ["%s%0*d%s" % (pre, len(lo), i, suf) for i in range(int(lo), int(hi) + 1)]
        else:
            out.append(pre + part + suf)
    return out


class Cluster:
    def __init__(self, desc):
        self.reserve = float((desc.get("policy") or {}).get("power_reserve_pct", 0)) / 100.0
        self.types = {t["name"]: t for t in desc["node_types"]}
        self.domains = {d["name"]: d for d in desc.get("power_domains") or []}
        self.racks = {}
        self.node = {}  # name -> (rack, type)
        for r in desc["racks"]:
            self.racks[r["name"]] = r
            for n in expand(str(r["nodes"])):
                self.node[n] = (r["name"], r["type"])

    def per_gpu(self, type_name, watts):
        t = self.types[type_name]
        return float(watts) if watts else (t["node_watts"] - t["idle_watts"]) / t["gpus"]

    def usable(self, cap_kw):
        return float(cap_kw) * 1000.0 * (1.0 - self.reserve) if cap_kw else math.inf

    def idle(self, rack):
        r = self.racks[rack]
        return self.types[r["type"]]["idle_watts"] * sum(1 for v in self.node.values() if v[0] == rack)

    def chain(self, rack):
        """The power domains above a rack, nearest first."""
        out, d = [], self.racks[rack].get("power_domain")
        while d:
            out.append(d)
            d = self.domains[d].get("parent")
        return out

    def nvlink_domain(self, node):
        rack, type_name = self.node[node]
        return rack if self.types[type_name].get("nvlink") == "rack" else node


def load(path, last):
    try:
        with open(path) as f:
            return Cluster(yaml.safe_load(f))
    except Exception:  # a broken file on purpose: keep the last good one, as the plugin does
        return last


def read_jobs(path):
    jobs = {}
    if os.path.exists(path):
        for line in open(path):
            f = line.split()
            if len(f) >= 6:
                jobs[f[0]] = {"gpus": int(f[1]), "per_node": int(f[2]), "watts": float(f[3]), "locality": f[4],
                              "partition": None if f[5] == "-" else set(f[5].split(",")),
                              "nodes": int(f[6]) if len(f) >= 7 else 0}
    return jobs


def running_gpus():
    """{job id: [(node, [gpu index, ...]), ...]} of every running job, from scontrol show job -d."""
    text = subprocess.run(["scontrol", "show", "job", "-d"], capture_output=True, text=True, timeout=60).stdout
    out = {}
    for block in text.split("\n\n"):
        m = re.search(r"JobId=(\d+)", block)
        if not m or "JobState=RUNNING" not in block:
            continue
        placed = []
        for nodes, idx in re.findall(r" Nodes=(\S+) CPU_IDs=\S+ Mem=\S+ GRES=\S*?\(IDX:([^)]*)\)", block):
            gpus = []
            for part in idx.split(","):
                if "-" in part:
                    lo, hi = part.split("-")
                    gpus += list(range(int(lo), int(hi) + 1))
                elif part:
                    gpus.append(int(part))
            hosts = subprocess.run(["scontrol", "show", "hostnames", nodes], capture_output=True, text=True,
                                   timeout=60).stdout.split()
            placed += [(h, gpus) for h in hosts]
        out[m.group(1)] = placed
    return out


class CapHistory:
    """A cap lowered at run time may be exceeded by the jobs that were already running under it (nothing in
    rackwise stops a running job), never by a job that started after: per rack and power domain, the jobs seen
    there when the checker first saw the lower cap."""

    def __init__(self):
        self.usable = {}       # "rack r" / "domain d" -> the usable cap last seen
        self.grandfathered = {}  # the same keys -> job ids running there when the cap went down

    def note(self, key, cap, jobs_there):
        if key in self.usable and cap < self.usable[key]:
            self.grandfathered[key] = set(jobs_there)
        self.usable[key] = cap

    def excused(self, key, jobs_there):
        return key in self.grandfathered and set(jobs_there) <= self.grandfathered[key]


def findings(cluster, jobs, running, history):
    """What breaks a promise in one sample: a GPU held twice, a rack or power domain over its usable cap."""
    found = []
    held = {}
    draw = {r: cluster.idle(r) for r in cluster.racks}
    on_rack = {r: set() for r in cluster.racks}
    for job, placed in running.items():
        for node, gpus in placed:
            if node not in cluster.node:
                continue
            for g in gpus:
                if (node, g) in held:
                    found.append("GPU %s:%d held by jobs %s and %s" % (node, g, held[(node, g)], job))
                held[(node, g)] = job
            rack, type_name = cluster.node[node]
            draw[rack] += len(gpus) * cluster.per_gpu(type_name, jobs.get(job, {}).get("watts", 0))
            on_rack[rack].add(job)
    domain_draw = {d: 0.0 for d in cluster.domains}
    on_domain = {d: set() for d in cluster.domains}
    for rack, watts in draw.items():
        cap = cluster.usable(cluster.racks[rack].get("power_cap_kw"))
        history.note("rack " + rack, cap, on_rack[rack])
        if watts > cap + 0.5 and not history.excused("rack " + rack, on_rack[rack]):
            found.append("rack %s draws %.1f kW over its usable %.1f kW" % (rack, watts / 1e3, cap / 1e3))
        for d in cluster.chain(rack):
            domain_draw[d] += watts
            on_domain[d] |= on_rack[rack]
    for d, watts in domain_draw.items():
        cap = cluster.usable(cluster.domains[d].get("power_cap_kw"))
        history.note("domain " + d, cap, on_domain[d])
        if watts > cap + 0.5 and not history.excused("domain " + d, on_domain[d]):
            found.append("power domain %s draws %.1f kW over its usable %.1f kW" % (d, watts / 1e3, cap / 1e3))
    return found


def sample(desc_path, jobs_path, out_path, stop_path):
    cluster = load(desc_path, None)
    seen_path = out_path + ".seen"
    history = CapHistory()
    count = 0
    with open(out_path, "a") as out, open(seen_path, "a") as seen:
        while not os.path.exists(stop_path):
            cluster = load(desc_path, cluster)
            jobs = read_jobs(jobs_path)
            try:
                running = running_gpus()
            except Exception as e:  # slurmctld restarting: no sample this round
                out.write("note: no sample: %s\n" % e)
                time.sleep(0.3)
                continue
            for line in findings(cluster, jobs, running, history):
                out.write("FINDING sample %d: %s\n" % (count, line))
            for job, placed in running.items():
                seen.write("%s %s\n" % (job, ",".join(sorted({n for n, _ in placed}))))
            count += 1
            out.write("sample %d: %d running\n" % (count, len(running)))
            out.flush()
            seen.flush()
            time.sleep(0.3)


def idle_rooms(cluster):
    """Each rack's and power domain's usable room above the idle draw, in watts."""
    room = {r: cluster.usable(cluster.racks[r].get("power_cap_kw")) - cluster.idle(r) for r in cluster.racks}
    droom = {d: cluster.usable(cluster.domains[d].get("power_cap_kw")) for d in cluster.domains}
    for r in cluster.racks:
        for d in cluster.chain(r):
            droom[d] -= cluster.idle(r)
    return room, droom


def take_largest_first(cluster, offers, gpus, step, pg, room, droom, most=math.inf):
    """Takes the job's GPUs from `offers` ((size, rack) per NVLink domain), each time from the domain that can give
    the most now (its free GPUs, limited by its rack's and power domains' rooms), at most `most` domains. Returns
    (GPUs left, domains taken)."""
    left, taken, offers = gpus, 0, list(offers)

    def can_give(offer):
        size, rack = offer
        fits = math.inf if pg == 0 else int(min([room[rack]] + [droom[x] for x in cluster.chain(rack)]) // pg)
        return min(size, left, fits) // step * step

    while left > 0 and taken < most and offers:
        best = max(range(len(offers)), key=lambda i: can_give(offers[i]))
        take = can_give(offers[best])
        if take <= 0:
            break
        rack = offers.pop(best)[1]
        room[rack] -= take * pg
        for x in cluster.chain(rack):
            droom[x] -= take * pg
        left -= take
        taken += 1
    return left, taken


def fewest_for_type(cluster, type_name, nodes, gpus, per_node, watts):
    """The fewest NVLink domains of one type that can hold the job on the empty cluster under the caps: domains
    taken largest first, each rack's and power domain's usable room shared by the domains under it (a greedy
    count, exact for the clusters the live tests use: every domain of a type is the same size). 0: it cannot."""
    t = cluster.types[type_name]
    if per_node > t["gpus"]:
        return 0
    step = per_node if per_node else 1
    domains = {}
    for n in nodes:
        if cluster.node[n][1] == type_name:
            domains.setdefault(cluster.nvlink_domain(n), []).append(n)
    offers = sorted(((len(m) * (t["gpus"] // step * step), cluster.node[m[0]][0]) for m in domains.values()),
                    reverse=True)
    room, droom = idle_rooms(cluster)
    left, taken = take_largest_first(cluster, offers, gpus, step, cluster.per_gpu(type_name, watts), room, droom)
    return taken if left <= 0 else 0


def read_seen(seen_path):
    seen = {}
    for line in open(seen_path):
        job, nodes = line.split()
        seen.setdefault(job, set()).update(nodes.split(","))
    return seen


def fewest_domains(cluster, j):
    """The fewest NVLink domains any node type of the job's partition could give it on the empty cluster under
    the caps (0: none can). A job that asked for N nodes gets at least N domains on a type whose domain is the
    node."""
    nodes = j["partition"] or set(cluster.node)
    fewest = []
    for tn in cluster.types:
        if not tn_allows_watts(cluster, tn, j["watts"]):
            continue
        f = fewest_for_type(cluster, tn, nodes, j["gpus"], j["per_node"], j["watts"])
        if f > 0 and cluster.types[tn].get("nvlink") != "rack":
            f = max(f, j.get("nodes", 0))
        if f > 0:
            fewest.append(f)
    return min(fewest) if fewest else 0


def judge_domains(desc_path, jobs_path, seen_path):
    cluster = load(desc_path, None)
    jobs = read_jobs(jobs_path)
    seen = read_seen(seen_path)
    bad = 0
    for job, j in sorted(jobs.items(), key=lambda kv: int(kv[0])):
        if j["locality"] != "required" or job not in seen:
            continue
        got = len({cluster.nvlink_domain(n) for n in seen[job] if n in cluster.node})
        want = fewest_domains(cluster, j)
        verdict = "ok" if got <= want else "TOO MANY"
        bad += got > want
        print("job %s required %d GPUs: %d NVLink domains, fewest %d: %s" % (job, j["gpus"], got, want, verdict))
    return 1 if bad else 0


def judge_locality(desc_path, jobs_path, seen_path):
    """Every job seen running, whatever its locality: whether it ran in its fewest NVLink domains."""
    cluster = load(desc_path, None)
    jobs = read_jobs(jobs_path)
    seen = read_seen(seen_path)
    at, placed = 0, 0
    for job, j in sorted(jobs.items(), key=lambda kv: int(kv[0])):
        if job not in seen:
            continue
        got = len({cluster.nvlink_domain(n) for n in seen[job] if n in cluster.node})
        want = fewest_domains(cluster, j)
        placed += 1
        at += got <= want
        print("job %s %s %d GPUs: %d NVLink domains, fewest %d%s" % (job, j["locality"], j["gpus"], got, want,
                                                                  "" if got <= want else ": MORE"))
    print("at fewest %d of %d" % (at, placed))
    return 0


def tn_allows_watts(cluster, type_name, watts):
    """Whether a declared watts per GPU is at or above the type's floor: the GPU's share of the node's idle power
    (idle_watts x min(gpu_watts / node_watts, 1 / gpus)), below which a job would run for free."""
    if not watts:
        return True
    t = cluster.types[type_name]
    share = min(t["gpu_watts"] / t["node_watts"], 1.0 / t["gpus"]) if t.get("gpu_watts") else 1.0 / t["gpus"]
    return watts >= t["idle_watts"] * share


def fits_now(cluster, running, job):
    """Whether `job` can start in its fewest NVLink domains beside `running` ({id: {node: gpus}}, every job at its
    type's default watts): each domain takes what its free GPUs, its rack's and its power domains' rooms allow,
    largest first, within one node type."""
    nodes = set(cluster.node)
    want = min([f for f in (fewest_for_type(cluster, tn, nodes, job["gpus"], job["per_node"], job["watts"])
                            for tn in cluster.types) if f > 0] or [0])
    if not want:
        return False
    used = {n: 0 for n in cluster.node}
    for placed in running.values():
        for n, g in placed.items():
            used[n] += g
    for tn, t in cluster.types.items():
        room, droom = idle_rooms(cluster)
        for n, g in used.items():
            rack, ntype = cluster.node[n]
            room[rack] -= g * cluster.per_gpu(ntype, 0)
            for d in cluster.chain(rack):
                droom[d] -= g * cluster.per_gpu(ntype, 0)
        step = job["per_node"] or 1
        if step > t["gpus"]:
            continue
        free = {}
        for n, (rack, ntype) in cluster.node.items():
            if ntype == tn:
                free.setdefault(cluster.nvlink_domain(n), []).append((t["gpus"] - used[n]) // step * step)
        racks = {cluster.nvlink_domain(n): rack for n, (rack, _) in cluster.node.items()}
        offers = sorted(((sum(f), racks[d]) for d, f in free.items()), reverse=True)
        left, _ = take_largest_first(cluster, offers, job["gpus"], step, cluster.per_gpu(tn, job["watts"]), room,
                                     droom, most=want)
        if left <= 0:
            return True
    return False


def judge_victims(desc_path, jobs_path, before_path, job_id, gone, preemptable):
    """Whether the jobs preempted for `job_id` (`gone`, a comma list) are as few as can make room: the smallest
    subset of the preemptable jobs (a comma list) that ran before (every subset, smallest first) after whose
    removal the job fits."""
    import itertools
    cluster = load(desc_path, None)
    jobs = read_jobs(jobs_path)
    running = {}
    for line in open(before_path):
        f = line.split()
        if len(f) == 2:
            running[f[0]] = {n: int(g) for n, g in (x.split(":") for x in f[1].split(","))}
    job = jobs[job_id]
    victims = [] if gone == "-" else gone.split(",")
    pool = sorted(set(preemptable.split(",")) & set(running))
    for k in range(len(pool) + 1):
        if any(fits_now(cluster, {i: p for i, p in running.items() if i not in drop}, job)
               for drop in itertools.combinations(pool, k)):
            break
    else:
        return "FAIL: no set of running jobs makes room"
    rest = {i: p for i, p in running.items() if i not in victims}
    if len(victims) != k:
        return "FAIL: %d jobs preempted (%s), the fewest that make room is %d" % (len(victims), gone, k)
    if not fits_now(cluster, rest, job):
        return "FAIL: the preempted jobs (%s) do not make room" % gone
    return "ok: %d jobs preempted (%s), the fewest that make room" % (k, gone)


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "sample":
        sample(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "domains":
        sys.exit(judge_domains(*sys.argv[2:]))
    elif len(sys.argv) == 5 and sys.argv[1] == "locality":
        sys.exit(judge_locality(*sys.argv[2:]))
    elif len(sys.argv) == 8 and sys.argv[1] == "victims":
        print(judge_victims(*sys.argv[2:]))
    else:
        sys.exit(__doc__)
