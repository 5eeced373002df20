// `rackwise size`: what N GPUs of a system take (servers, racks, NVLink domains, scalable units, fabric, power,
// cooling), as a table, JSON (the keys of docs/design.md), a cluster description (--emit-cluster) and an SVG of the
// racks coloured by power. The model lives in the core (rackwise/sizing.h); this file only formats.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "absl/strings/str_format.h"
#include "command.h"
#include "rackwise/cluster_description.h"
#include "rackwise/sizing.h"

namespace rackwise::cli {
namespace {

nlohmann::ordered_json ToJson(const SizingParams& p, const SizingResult& r) {
  nlohmann::ordered_json j;
  j["system"] = SizingSystemName(p.system);
  j["requested_gpus"] = r.requested_gpus;
  j["gpus"] = r.gpus;
  j["nodes"] = r.nodes;
  j["racks"] = r.racks;
  j["nvlink_domains"] = r.nvlink_domains;
  j["scalable_units"] = r.scalable_units;
  j["leaf_switches"] = r.leaf_switches;
  j["spine_switches"] = r.spine_switches;
  j["switches"] = r.switches;
  j["it_power_kw"] = r.it_power_kw;
  j["facility_power_kw"] = r.facility_power_kw;
  j["cooling"] = r.cooling;
  j["core_switches"] = r.core_switches;
  j["fabric_tiers"] = r.fabric_tiers;
  j["rails"] = r.rails;
  j["gpu_ports"] = r.gpu_ports;
  j["gpu_port_gbps"] = p.gpu_port_gbps;
  j["cables"] = r.cables;
  j["optics"] = r.optics;
  j["nodes_per_rack"] = p.nodes_per_rack;
  j["nvlink_domain_gpus"] = r.nvlink_domain_gpus;
  j["rack_kw"] = r.rack_kw;
  j["rack_cap_kw"] = r.rack_cap_kw;
  j["compute_kw"] = r.compute_kw;
  j["network_kw"] = r.network_kw;
  j["pue"] = r.pue;
  j["rows"] = r.rows;
  return j;
}

void PrintTable(const SizingParams& p, const SizingResult& r) {
  auto row = [](const char* k, const std::string& v) { std::printf("  %-17s %s\n", k, v.c_str()); };
  std::printf("rackwise size: %s, %d GPUs requested\n", SizingSystemName(p.system), r.requested_gpus);
  row("GPUs", absl::StrFormat("%d", r.gpus));
  row("servers", absl::StrFormat("%d x %d GPUs (%s)", r.nodes, p.gpus_per_node, p.node_type));
  row("racks", absl::StrFormat("%d x %d nodes, %.1f kW each at full load (cap %.0f kW)", r.racks,
                               std::min(p.nodes_per_rack, r.nodes), r.rack_kw, r.rack_cap_kw));
  row("NVLink domains", absl::StrFormat("%d x %d GPUs (%s)", r.nvlink_domains, r.nvlink_domain_gpus,
                                        p.nvlink_rack ? "one per rack" : "one per node"));
  row("scalable units", absl::StrFormat("%d x %d nodes", r.scalable_units, p.su_nodes));
  if (r.fabric_tiers == 0) {
    row("compute fabric", "none (a single NVLink domain)");
  } else {
    row("compute fabric",
        absl::StrFormat("%d tiers, %d rails, %d-port switches, non-blocking", r.fabric_tiers, r.rails, p.switch_radix));
    row("  leaf switches", absl::StrFormat("%d (%d per rail per SU)", r.leaf_switches, r.leaves_per_rail_per_su));
    row("  spine switches", absl::StrFormat("%d", r.spine_switches));
    if (r.core_switches) row("  core switches", absl::StrFormat("%d", r.core_switches));
    row("  switches", absl::StrFormat("%d", r.switches));
  }
  row("GPU ports", absl::StrFormat("%d x %d Gb/s", r.gpu_ports, p.gpu_port_gbps));
  row("cables", absl::StrFormat("%d (node-leaf %d, leaf-spine %d, spine-core %d)", r.cables, r.cables_node_leaf,
                                r.cables_leaf_spine, r.cables_spine_core));
  row("optics", absl::StrFormat("%d transceivers", r.optics));
  row("IT power", absl::StrFormat("%.1f kW (compute %.1f, network %.1f)", r.it_power_kw, r.compute_kw, r.network_kw));
  row("facility power", absl::StrFormat("%.1f kW (PUE %.2f)", r.facility_power_kw, r.pue));
  row("cooling",
      absl::StrFormat("%s (%s)", r.cooling,
                      p.liquid_required ? "required by the system"
                      : r.cooling == "liquid"
                          ? absl::StrFormat("%.1f kW per rack > %.0f kW air limit", r.rack_kw, p.air_limit_kw)
                          : absl::StrFormat("%.1f kW per rack <= %.0f kW air limit", r.rack_kw, p.air_limit_kw)));
  row("power domains", absl::StrFormat("%d row%s under one hall", r.rows, r.rows == 1 ? "" : "s"));
}

// Racks drawn row by row, each coloured by its full-load draw on a green-to-red scale.
std::string Svg(const SizingParams& p, const SizingResult& r, const v1::ClusterDescription& d) {
  const int per_row =
      std::max(1, p.racks_per_row > 0 ? p.racks_per_row : (p.su_nodes + p.nodes_per_rack - 1) / p.nodes_per_rack);
  const int w = 56, h = 90, gap = 8, left = 70, top = 50;
  const int width = left + std::min(per_row, r.racks) * (w + gap) + 20;
  const int height = top + r.rows * (h + 28) + 60;
  double max_kw = 0;
  for (int n : r.nodes_in_rack) max_kw = std::max(max_kw, n * p.node_watts / 1000.0);
  std::ostringstream s;
  s << absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\">\n", width,
      height);
  s << absl::StrFormat(
      "<text x=\"10\" y=\"22\" font-size=\"15\">%s: %d GPUs, %d racks, %.0f kW IT, %.0f kW facility, %s "
      "cooled</text>\n",
      d.cluster(), r.gpus, r.racks, r.it_power_kw, r.facility_power_kw, r.cooling);
  s << absl::StrFormat(
      "<text x=\"10\" y=\"40\" font-size=\"11\">rack colour = full-load kW (green low, red %.0f kW); air limit %.0f "
      "kW</text>\n",
      std::max(max_kw, p.air_limit_kw), p.air_limit_kw);
  const double scale_max = std::max(max_kw, p.air_limit_kw);
  for (int i = 0; i < r.racks; ++i) {
    const int row = i / per_row, col = i % per_row;
    const double kw = r.nodes_in_rack[i] * p.node_watts / 1000.0;
    const double t = std::clamp(kw / scale_max, 0.0, 1.0);
    const int red = static_cast<int>(60 + 195 * t), green = static_cast<int>(200 - 150 * t);
    const int x = left + col * (w + gap), y = top + row * (h + 28);
    if (col == 0) {
      s << absl::StrFormat("<text x=\"10\" y=\"%d\" font-size=\"11\">%s</text>\n", y + h / 2,
                           d.racks(i).power_domain());
    }
    s << absl::StrFormat(
        "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"rgb(%d,%d,60)\" stroke=\"#333\">"
        "<title>%s: %d nodes, %.1f kW at full load, cap %.0f kW, %s</title></rect>\n",
        x, y, w, h, red, green, d.racks(i).name(), r.nodes_in_rack[i], kw, d.racks(i).power_cap_kw(),
        d.racks(i).scalable_unit());
    s << absl::StrFormat("<text x=\"%d\" y=\"%d\" font-size=\"10\">%s</text>\n", x + 3, y + 14, d.racks(i).name());
    s << absl::StrFormat("<text x=\"%d\" y=\"%d\" font-size=\"10\">%.1f kW</text>\n", x + 3, y + h - 6, kw);
    s << absl::StrFormat("<text x=\"%d\" y=\"%d\" font-size=\"9\">%s</text>\n", x + 3, y + h + 12,
                         d.racks(i).scalable_unit());
  }
  s << "</svg>\n";
  return s.str();
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "rackwise size: cannot write %s\n", path.c_str());
    return false;
  }
  return true;
}

// Everything the command line sets. The overrides keep the system's default when zero or negative (each as
// ApplyOverrides reads it).
struct SizeFlags {
  std::string system_name;
  int gpus = 0;
  bool json = false;
  std::string emit, svg, name;
  int nodes_per_rack = 0, su_nodes = 0, radix = 0, racks_per_row = -1;
  double pue = 0, switch_watts = -1, air_limit = 0, rack_cap = 0, row_pct = 100, hall_pct = 100;
  double node_watts = 0, idle_watts = -1, gpu_watts = 0;
};

void AddSizeFlags(CLI::App& app, SizeFlags* f) {
  app.add_option("--system", f->system_name, "h100 | b200 | gb200-nvl72")->required();
  app.add_option("--gpus", f->gpus, "GPUs wanted (rounded up to whole nodes, or whole racks for NVL72)")->required();
  app.add_flag("--json", f->json, "print JSON instead of the table");
  app.add_option("--emit-cluster", f->emit, "write the design as a cluster description (YAML)");
  app.add_option("--svg", f->svg, "write an SVG of the racks coloured by power");
  app.add_option("--name", f->name, "cluster name in the description (default <system>-<gpus>)");
  app.add_option("--nodes-per-rack", f->nodes_per_rack, "servers (or NVL72 trays) per rack");
  app.add_option("--su-nodes", f->su_nodes, "nodes per scalable unit (32 HGX nodes; 144 NVL72 trays)");
  app.add_option("--switch-radix", f->radix, "ports per fabric switch (64)");
  app.add_option("--switch-watts", f->switch_watts, "watts per fabric switch with optics (1500)");
  app.add_option("--pue", f->pue, "PUE (default 1.5 air, 1.2 liquid)");
  app.add_option("--air-limit-kw", f->air_limit, "rack kW above which the design must be liquid cooled (60)");
  app.add_option("--node-watts", f->node_watts, "node power at full load");
  app.add_option("--idle-watts", f->idle_watts, "node power idle");
  app.add_option("--gpu-watts", f->gpu_watts, "GPU nameplate power (informational)");
  app.add_option("--rack-cap-kw", f->rack_cap, "rack cap in the emitted description (default: full load, rounded up)");
  app.add_option("--racks-per-row", f->racks_per_row, "racks per row power domain (default: one SU's racks)");
  app.add_option("--row-cap-pct", f->row_pct, "row cap as % of its racks' caps (100)");
  app.add_option("--hall-cap-pct", f->hall_pct, "hall cap as % of the rows' caps (100)");
}

// The system's defaults with the flags that were given laid over them.
SizingParams ApplyOverrides(SizingSystem system, const SizeFlags& f) {
  SizingParams p = DefaultSizingParams(system);
  p.gpus = f.gpus;
  p.cluster_name = f.name;
  if (f.nodes_per_rack) p.nodes_per_rack = f.nodes_per_rack;
  if (f.su_nodes) p.su_nodes = f.su_nodes;
  if (f.radix) p.switch_radix = f.radix;
  if (f.switch_watts >= 0) p.switch_watts = f.switch_watts;
  if (f.pue) p.pue = f.pue;
  if (f.air_limit) p.air_limit_kw = f.air_limit;
  if (f.node_watts) p.node_watts = f.node_watts;
  if (f.idle_watts >= 0) p.idle_watts = f.idle_watts;
  if (f.gpu_watts) p.gpu_watts = f.gpu_watts;
  if (f.racks_per_row >= 0) p.racks_per_row = f.racks_per_row;
  p.rack_cap_kw = f.rack_cap;
  p.row_cap_pct = f.row_pct;
  p.hall_cap_pct = f.hall_pct;
  return p;
}

// Writes --emit-cluster and --svg. Both are checked first: a file that `rackwise validate` would refuse is not
// written at all. The YAML starts with the command that made it, so it can be made again. An exit code.
int WriteDesignFiles(const SizeFlags& f, const SizingParams& p, const SizingResult& r, const v1::ClusterDescription& d,
                     int argc, char** argv) {
  if (f.emit.empty() && f.svg.empty()) return kExitOk;
  Diagnostics diags;
  if (!ValidateClusterDescription(d, f.emit.empty() ? f.svg : f.emit, &diags)) {
    for (const Diagnostic& diag : diags) std::fprintf(stderr, "%s\n", diag.ToString().c_str());
    std::fprintf(stderr, "rackwise size: the design does not make a valid description (caps below idle draw?)\n");
    return kExitInvalidInput;
  }
  if (!f.emit.empty()) {
    std::string command = "rackwise";
    for (int i = 0; i < argc; ++i) command += std::string(" ") + argv[i];
    std::string yaml = absl::StrFormat(
        "# Generated by: %s\n# %d racks of %s, %.1f kW per rack at full load, %d scalable units, %d rows.\n", command,
        r.racks, p.node_type, r.rack_kw, r.scalable_units, r.rows);
    yaml += ClusterDescriptionToYaml(d);
    if (!WriteFile(f.emit, yaml)) return kExitInvalidInput;
  }
  if (!f.svg.empty() && !WriteFile(f.svg, Svg(p, r, d))) return kExitInvalidInput;
  return kExitOk;
}

int RunSize(int argc, char** argv) {
  CLI::App app{"Size a cluster: servers, racks, NVLink domains, scalable units, fabric, power, cooling", "size"};
  SizeFlags flags;
  AddSizeFlags(app, &flags);
  if (std::optional<int> rc = ParseCommandFlags(app, argc, argv)) return *rc;
  absl::StatusOr<SizingSystem> system = ParseSizingSystem(flags.system_name);
  if (!system.ok()) {
    std::fprintf(stderr, "rackwise size: --system: %s\n", std::string(system.status().message()).c_str());
    return kExitUsage;
  }
  const SizingParams p = ApplyOverrides(*system, flags);
  absl::StatusOr<SizingResult> r = SizeCluster(p);
  if (!r.ok()) {
    std::fprintf(stderr, "rackwise size: %s\n", std::string(r.status().message()).c_str());
    return kExitUsage;
  }
  const v1::ClusterDescription d = SizingToClusterDescription(p, *r);
  if (int rc = WriteDesignFiles(flags, p, *r, d, argc, argv); rc != kExitOk) return rc;
  if (flags.json) {
    std::printf("%s\n", ToJson(p, *r).dump(2).c_str());
  } else {
    PrintTable(p, *r);
  }
  return kExitOk;
}

}  // namespace

RACKWISE_REGISTER_COMMAND(size, "size", "size a cluster: servers, racks, fabric, power, cooling", RunSize);

}  // namespace rackwise::cli
