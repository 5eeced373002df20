// The independent placements checker. See placement_checker.h.
#include "placement_checker.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>

#include "rackwise/hostlist.h"

namespace rackwise::check {
namespace {

struct NodeInfo {
  int rack = -1;
  int gpus = 0;
  double idle_w = 0;
  double per_gpu_w = 0;
  std::string domain;  // NVLink domain key
  std::string type;
};

// The largest NVLink domain of a node type: the physical minimum of domains for a job is counted against it.
struct TypeDomains {
  bool rack_scope = false;
  int node_gpus = 0;
  int max_domain_gpus = 0;
  int max_domain_nodes = 0;
};

struct Event {
  double time;
  int order;  // releases (0) before starts (1) at the same time
  int rack;
  double watts;
};

}  // namespace

CheckReport CheckPlacements(const v1::ClusterDescription& d, const std::vector<TraceJob>& trace, std::string_view jsonl,
                            double spread_slowdown) {
  CheckReport rep;
  auto fail = [&](std::string msg) {
    if (rep.errors.size() < 100) rep.errors.push_back(std::move(msg));
  };
  // The description, from scratch.
  std::unordered_map<std::string, const v1::NodeType*> types;
  for (const v1::NodeType& t : d.node_types()) types[t.name()] = &t;
  std::unordered_map<std::string, int> pd_index;
  for (int i = 0; i < d.power_domains_size(); ++i) pd_index[d.power_domains(i).name()] = i;
  std::vector<double> rack_cap(d.racks_size()), rack_draw(d.racks_size(), 0);
  std::vector<double> pd_cap(d.power_domains_size()), pd_draw(d.power_domains_size(), 0);
  std::vector<std::vector<int>> rack_chain(d.racks_size());
  std::unordered_map<std::string, NodeInfo> nodes;
  std::unordered_map<std::string, int> rack_index;
  std::unordered_map<std::string, std::pair<int, int>> domain_size;  // key -> (GPUs, nodes)
  std::unordered_map<std::string, TypeDomains> type_domains;
  for (int p = 0; p < d.power_domains_size(); ++p) pd_cap[p] = d.power_domains(p).power_cap_kw() * 1000;
  for (int r = 0; r < d.racks_size(); ++r) {
    const v1::Rack& rack = d.racks(r);
    rack_index[rack.name()] = r;
    rack_cap[r] = rack.power_cap_kw() * 1000;
    std::vector<std::pair<std::string, std::string>> groups;
    if (!rack.nodes().empty()) groups.push_back({rack.type(), rack.nodes()});
    for (const v1::NodeGroup& g : rack.node_groups()) groups.push_back({g.type(), g.nodes()});
    for (const auto& [type_name, hostlist] : groups) {
      auto names = ExpandHostlist(hostlist);
      auto type = types.find(type_name);
      if (!names.ok() || type == types.end()) {
        fail("description: rack " + rack.name() + ": bad node group");
        continue;
      }
      const v1::NodeType& t = *type->second;
      for (const std::string& n : *names) {
        NodeInfo info;
        info.rack = r;
        info.gpus = static_cast<int>(t.gpus());
        info.idle_w = t.idle_watts();
        info.per_gpu_w = (t.node_watts() - t.idle_watts()) / t.gpus();
        info.domain = t.nvlink() == v1::NVLINK_SCOPE_RACK ? "rack:" + rack.name() + "/" + t.name() : "node:" + n;
        info.type = t.name();
        domain_size[info.domain].first += info.gpus;
        domain_size[info.domain].second += 1;
        TypeDomains& td = type_domains[t.name()];
        td.rack_scope = t.nvlink() == v1::NVLINK_SCOPE_RACK;
        td.node_gpus = info.gpus;
        rack_draw[r] += info.idle_w;
        nodes[n] = info;
      }
    }
    int guard = 0;
    for (std::string p = rack.power_domain(); !p.empty() && guard < 64; ++guard) {
      auto it = pd_index.find(p);
      if (it == pd_index.end()) break;
      rack_chain[r].push_back(it->second);
      p = d.power_domains(it->second).parent();
    }
  }
  for (int r = 0; r < d.racks_size(); ++r) {
    for (int p : rack_chain[r]) pd_draw[p] += rack_draw[r];
  }
  for (const auto& [key, info] : nodes) {
    TypeDomains& td = type_domains[info.type];
    td.max_domain_gpus = std::max(td.max_domain_gpus, domain_size[info.domain].first);
    td.max_domain_nodes = std::max(td.max_domain_nodes, domain_size[info.domain].second);
  }
  // ceil(gpus / domain size), the least over every node type that can take the job (a job that waits for the
  // type with the largest domains is not slowed), as docs/design.md defines the minimum (0: cannot say).
  auto min_domains = [&](const TraceJob& job) {
    int fewest = 0;
    for (const auto& [name, td] : type_domains) {
      const int k = job.gpus_per_node;
      int size = 0;
      if (td.rack_scope) {
        size = k > 0 ? (td.node_gpus >= k ? td.max_domain_nodes * k : 0) : td.max_domain_gpus;
      } else {
        size = k > 0 ? (td.node_gpus >= k ? k : 0) : td.node_gpus;
      }
      if (size <= 0) continue;
      const int n = (job.gpus + size - 1) / size;
      fewest = fewest == 0 ? n : std::min(fewest, n);
    }
    return fewest;
  };
  std::unordered_map<std::string, const TraceJob*> jobs;
  for (const TraceJob& j : trace) jobs[j.id] = &j;

  // The placements.
  std::unordered_map<std::string, std::vector<std::pair<double, double>>> held;  // "node#gpu" -> intervals
  std::vector<Event> events;
  std::set<std::string> seen;
  size_t start = 0;
  int line_no = 0;
  while (start < jsonl.size()) {
    size_t nl = jsonl.find('\n', start);
    if (nl == std::string_view::npos) nl = jsonl.size();
    std::string_view line = jsonl.substr(start, nl - start);
    start = nl + 1;
    ++line_no;
    if (line.empty()) continue;
    const std::string where = "line " + std::to_string(line_no);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("id") || !j.contains("start") || !j.contains("end") ||
        !j.contains("nodes") || !j.contains("gpus") || !j.contains("domains") || !j.contains("racks") ||
        !j["id"].is_string() || !j["start"].is_number() || !j["end"].is_number() || !j["gpus"].is_object()) {
      fail(where + ": malformed placement");
      continue;
    }
    ++rep.placements;
    const std::string id = j["id"];
    const double s = j["start"], e = j["end"];
    if (!seen.insert(id).second) fail(where + ": job " + id + " placed twice");
    auto job = jobs.find(id);
    if (job == jobs.end()) {
      fail(where + ": job " + id + " is not in the trace");
      continue;
    }
    if (s + 1e-9 < job->second->submit) fail(where + ": job " + id + " starts before it was submitted");
    int gpus = 0;
    std::set<int> racks;
    std::set<std::string> domains, listed;
    for (const auto& n : j["nodes"]) listed.insert(n.is_string() ? n.get<std::string>() : "?");
    std::unordered_map<int, double> rack_watts;
    for (auto it = j["gpus"].begin(); it != j["gpus"].end(); ++it) {
      auto node = nodes.find(it.key());
      if (node == nodes.end()) {
        fail(where + ": unknown node " + it.key());
        continue;
      }
      if (!listed.count(it.key())) fail(where + ": node " + it.key() + " has GPUs but is not in \"nodes\"");
      std::set<int> idx;
      for (const auto& g : it.value()) {
        if (!g.is_number_integer() || g.get<int>() < 0 || g.get<int>() >= node->second.gpus) {
          fail(where + ": bad GPU index on " + it.key());
          continue;
        }
        if (!idx.insert(g.get<int>()).second) fail(where + ": GPU listed twice on " + it.key());
      }
      for (int g : idx) held[it.key() + "#" + std::to_string(g)].push_back({s, e});
      gpus += static_cast<int>(idx.size());
      racks.insert(node->second.rack);
      domains.insert(node->second.domain);
      const TraceJob& tj = *job->second;
      const double per_gpu = tj.measured_watts_per_gpu > 0 ? tj.measured_watts_per_gpu
                             : tj.watts_per_gpu > 0        ? tj.watts_per_gpu
                                                           : node->second.per_gpu_w;
      rack_watts[node->second.rack] += per_gpu * idx.size();
    }
    if (listed.size() != j["gpus"].size()) fail(where + ": \"nodes\" and \"gpus\" disagree");
    if (gpus != job->second->gpus) fail(where + ": job " + id + " got " + std::to_string(gpus) + " GPUs");
    if (!j["domains"].is_number_integer() || j["domains"].get<int>() != static_cast<int>(domains.size()))
      fail(where + ": job " + id + " reports the wrong NVLink domain count");
    // It runs for its trace duration, or longer by the slowdown when it is outside its fewest NVLink domains.
    const bool outside = static_cast<int>(domains.size()) > min_domains(*job->second);
    const bool slowed = spread_slowdown > 0 && outside;
    if (job->second->locality != Locality::kNone) {
      ++rep.wanting_locality;
      rep.wanting_locality_at_fewest += !outside;
    }
    if (std::fabs((e - s) - job->second->duration * (slowed ? 1 + spread_slowdown : 1)) > 1e-6)
      fail(where + ": job " + id + " runs for the wrong time");
    std::set<std::string> rack_names;
    for (int r : racks) rack_names.insert(d.racks(r).name());
    std::set<std::string> listed_racks;
    for (const auto& r : j["racks"]) listed_racks.insert(r.is_string() ? r.get<std::string>() : "?");
    if (rack_names != listed_racks) fail(where + ": job " + id + " reports the wrong racks");
    for (const auto& [r, w] : rack_watts) {
      events.push_back({s, 1, r, w});
      events.push_back({e, 0, r, -w});
    }
  }
  // No GPU held twice at once.
  for (auto& [gpu, intervals] : held) {
    std::sort(intervals.begin(), intervals.end());
    for (size_t i = 1; i < intervals.size(); ++i) {
      if (intervals[i].first < intervals[i - 1].second - 1e-9) fail("GPU " + gpu + " is held by two jobs at once");
    }
  }
  // Sweep the power over time.
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.time != b.time ? a.time < b.time : a.order < b.order; });
  constexpr double kTolW = 1.0;  // the simulator keeps milliwatts; allow rounding, nothing more
  auto over = [&](double draw, double cap) { return draw > cap + kTolW ? draw - cap : 0.0; };
  double t = events.empty() ? 0 : events.front().time;
  std::vector<char> rack_was_over(d.racks_size(), 0), pd_was_over(d.power_domains_size(), 0);
  auto excursion = [&](char* was_over, double o) {
    if (o > 0 && !*was_over) ++rep.excursions;
    *was_over = o > 0;
  };
  for (int r = 0; r < d.racks_size(); ++r) rep.peak_rack_kw = std::max(rep.peak_rack_kw, rack_draw[r] / 1000);
  for (const Event& ev : events) {
    const double dt = ev.time - t;
    if (dt > 0) {
      for (int r = 0; r < d.racks_size(); ++r) {
        const double o = over(rack_draw[r], rack_cap[r]) * dt / 1000;
        excursion(&rack_was_over[r], o);
        if (o > 0) {
          rep.rack_violation_kws += o;
          rep.over_kws[d.racks(r).name()] += o;
        }
      }
      for (int p = 0; p < d.power_domains_size(); ++p) {
        const double o = over(pd_draw[p], pd_cap[p]) * dt / 1000;
        excursion(&pd_was_over[p], o);
        if (o > 0) {
          rep.domain_violation_kws += o;
          rep.over_kws[d.power_domains(p).name()] += o;
        }
      }
      t = ev.time;
    }
    rack_draw[ev.rack] += ev.watts;
    for (int p : rack_chain[ev.rack]) pd_draw[p] += ev.watts;
    rep.peak_rack_kw = std::max(rep.peak_rack_kw, rack_draw[ev.rack] / 1000);
  }
  return rep;
}

}  // namespace rackwise::check
