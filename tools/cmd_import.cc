// `rackwise import`: a cluster description skeleton from what the scheduler already knows, either Slurm's
// configuration (--slurm-conf, --gres-conf, --topology-conf) or Kubernetes' node labels (--k8s-nodes, the output
// of `kubectl get nodes -o json`). Watts and caps are guessed and tagged `!guess`, so `rackwise validate`
// refuses the skeleton, pointing at each line, until the administrator writes the real figures.
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include <CLI/CLI.hpp>

#include "adopt/description_skeleton.h"
#include "adopt/k8s_inventory.h"
#include "adopt/slurm_inventory.h"
#include "command.h"

namespace rackwise::cli {
namespace {

using adopt::ConfigText;

bool ReadConfig(const std::string& path, ConfigText* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot read\n", path.c_str());
    return false;
  }
  std::ostringstream text;
  text << in.rdbuf();
  *out = {path, text.str()};
  return true;
}

struct ImportArgs {
  std::string slurm_conf, gres_conf, k8s_nodes, output, cluster;
  std::vector<std::string> topology_confs;
  adopt::K8sLabels labels;
};

absl::StatusOr<adopt::Inventory> ReadInventory(const ImportArgs& args, Diagnostics* diagnostics, bool* unreadable) {
  if (!args.k8s_nodes.empty()) {
    ConfigText nodes;
    *unreadable = !ReadConfig(args.k8s_nodes, &nodes);
    if (*unreadable) return absl::NotFoundError(args.k8s_nodes);
    return adopt::InventoryFromK8sNodes(nodes, args.labels, diagnostics);
  }
  adopt::SlurmConfigs configs;
  *unreadable = !ReadConfig(args.slurm_conf, &configs.slurm_conf);
  if (!args.gres_conf.empty()) *unreadable |= !ReadConfig(args.gres_conf, &configs.gres_confs.emplace_back());
  for (const std::string& t : args.topology_confs)
    *unreadable |= !ReadConfig(t, &configs.topology_confs.emplace_back());
  if (*unreadable) return absl::NotFoundError("unreadable input");
  return adopt::InventoryFromSlurm(configs, diagnostics);
}

int RunImport(int argc, char** argv) {
  CLI::App app{"Write a description skeleton from Slurm's configuration or Kubernetes' node labels", "import"};
  ImportArgs args;
  auto* slurm = app.add_option("--slurm-conf", args.slurm_conf, "slurm.conf (ClusterName, NodeName ... Gres=gpu:...)");
  app.add_option("--gres-conf", args.gres_conf, "gres.conf (Name=gpu Type= Count=/File=)")->needs(slurm);
  app.add_option("--topology-conf", args.topology_confs,
                 "topology.conf: tree (leaf switch = rack, its parent = scalable unit) and/or block (a block of "
                 "rack-scale trays = one NVLink domain; of HGX nodes = a rack of one-node domains); repeat for both")
      ->needs(slurm);
  auto* k8s = app.add_option("--k8s-nodes", args.k8s_nodes, "kubectl get nodes -o json output");
  app.add_option("--rack-label", args.labels.rack, "node label naming the rack (default: NVLink clique)")->needs(k8s);
  app.add_option("--su-label", args.labels.scalable_unit, "node label naming the scalable unit")->needs(k8s);
  app.add_option("--name", args.cluster, "cluster name (default: slurm.conf's ClusterName, else 'imported')");
  app.add_option("-o,--output", args.output, "write the skeleton here instead of stdout");
  slurm->excludes(k8s);
  try {
    app.parse(argc, argv);
    if (args.slurm_conf.empty() && args.k8s_nodes.empty()) throw CLI::RequiredError("--slurm-conf or --k8s-nodes");
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  Diagnostics diagnostics;
  bool unreadable = false;
  absl::StatusOr<adopt::Inventory> inventory = ReadInventory(args, &diagnostics, &unreadable);
  std::string source = args.k8s_nodes.empty() ? args.slurm_conf : args.k8s_nodes;
  absl::StatusOr<v1::ClusterDescription> skeleton = absl::InvalidArgumentError("");
  std::set<std::string> guessed_scopes;
  if (inventory.ok()) {
    if (!args.cluster.empty()) inventory->cluster = args.cluster;
    skeleton = adopt::BuildSkeleton(*inventory, source, &diagnostics, &guessed_scopes);
  }
  for (const Diagnostic& d : diagnostics) std::fprintf(stderr, "%s\n", d.ToString().c_str());
  if (unreadable || !skeleton.ok()) return kExitInvalidInput;
  std::string yaml = adopt::SkeletonToYaml(
      *skeleton,
      "Imported by `rackwise import` from " + source +
          ".\nEvery figure tagged !guess is a guess: put the real value (measured or from the vendor) and "
          "drop the tag;\n`rackwise validate` refuses the file until then. Add power_domains above the "
          "racks if your feeds have caps.",
      guessed_scopes);
  if (args.output.empty()) {
    std::fputs(yaml.c_str(), stdout);
    return kExitOk;
  }
  std::ofstream out(args.output, std::ios::binary | std::ios::trunc);
  out << yaml;
  if (!out.flush()) {
    std::fprintf(stderr, "%s: cannot write\n", args.output.c_str());
    return kExitInvalidInput;
  }
  std::fprintf(stderr, "%s: %d node types, %d racks; fill in every !guess, then run rackwise validate %s\n",
               args.output.c_str(), skeleton->node_types_size(), skeleton->racks_size(), args.output.c_str());
  return kExitOk;
}

}  // namespace

RACKWISE_REGISTER_COMMAND(import, "import",
                          "a description skeleton from slurm.conf/gres.conf/topology.conf or k8s nodes", RunImport);

}  // namespace rackwise::cli
