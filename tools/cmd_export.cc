// `rackwise export --cluster FILE (--slurm-dir DIR | --k8s-nodes FILE)`: what Slurm or Kubernetes would hold for
// a described cluster (slurm.conf, gres.conf, topology.conf and topology-block.conf; or a NodeList with GPU
// Feature Discovery's labels). A starting point for a scheduler's configuration, and the inverse of import.
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <CLI/CLI.hpp>

#include "adopt/cluster_export.h"
#include "command.h"
#include "rackwise/cluster_description.h"

namespace rackwise::cli {
namespace {

bool WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (out.flush()) return true;
  std::fprintf(stderr, "%s: cannot write\n", path.c_str());
  return false;
}

int RunExport(int argc, char** argv) {
  CLI::App app{"Write the Slurm configuration or Kubernetes NodeList a description implies", "export"};
  std::string cluster = DefaultClusterPath(), slurm_dir, k8s_nodes;
  adopt::K8sLabels labels{.rack = "rackwise.io/rack", .scalable_unit = "rackwise.io/scalable-unit"};
  app.add_option("--cluster", cluster, "cluster description (default: the built-in example)");
  auto* slurm = app.add_option("--slurm-dir", slurm_dir,
                               "write slurm.conf, gres.conf, topology.conf (tree) and topology-block.conf here");
  auto* k8s = app.add_option("--k8s-nodes", k8s_nodes, "write a NodeList (kubectl get nodes -o json) here");
  app.add_option("--rack-label", labels.rack, "node label for the rack (with --k8s-nodes)")->capture_default_str();
  app.add_option("--su-label", labels.scalable_unit, "node label for the scalable unit")->capture_default_str();
  slurm->excludes(k8s);
  try {
    app.parse(argc, argv);
    if (slurm_dir.empty() && k8s_nodes.empty()) throw CLI::RequiredError("--slurm-dir or --k8s-nodes");
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  Diagnostics diagnostics;
  absl::StatusOr<v1::ClusterDescription> description = LoadClusterDescription(cluster, &diagnostics);
  if (!description.ok()) {
    for (const Diagnostic& d : diagnostics) std::fprintf(stderr, "%s\n", d.ToString().c_str());
    return kExitInvalidInput;
  }
  if (!k8s_nodes.empty())
    return WriteFile(k8s_nodes, adopt::ExportToK8sNodes(*description, labels)) ? kExitOk : kExitInvalidInput;
  std::filesystem::path dir(slurm_dir);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  adopt::SlurmExport out = adopt::ExportToSlurm(*description);
  bool ok = WriteFile(dir / "slurm.conf", out.slurm_conf) && WriteFile(dir / "gres.conf", out.gres_conf) &&
            WriteFile(dir / "topology.conf", out.topology_tree);
  if (ok && !out.topology_block.empty()) ok = WriteFile(dir / "topology-block.conf", out.topology_block);
  return ok ? kExitOk : kExitInvalidInput;
}

}  // namespace

RACKWISE_REGISTER_COMMAND(export, "export", "the slurm.conf/gres.conf/topology.conf or k8s NodeList of a description",
                          RunExport);

}  // namespace rackwise::cli
