// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld: loading rackwise.yaml at startup, at restart and at reconfigure.
//
// A bad description never takes slurmctld down and never stops placement once a good one was accepted: every
// accepted description is saved in StateSaveLocation (rackwise.last-good.yaml), and a rejected file (logged
// with FILE:LINE) leaves the description in force, or after a restart (and, since Slurm 23.11, after every
// `scontrol reconfigure`, which starts a fresh slurmctld) the saved one. Only a first start with no good
// description refuses. GPU jobs are held only when no description at all fits slurm.conf's nodes.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "rackwise_select.h"
// Slurm last (see slurm_headers.h).
#include "slurm_records.h"

namespace rackwise::slurm {
namespace {

constexpr char kLastGoodName[] = "rackwise.last-good.yaml";

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(absl::StrCat(path, ": cannot read the cluster description: ", std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::string RackwiseSelect::DescriptionPath() const {
  std::string conf = slurm_conf.slurm_conf ? slurm_conf.slurm_conf : "";
  if (conf.empty()) {
    const char* env = getenv("SLURM_CONF");
    conf = env ? env : "/etc/slurm/slurm.conf";
  }
  const size_t slash = conf.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : conf.substr(0, slash);
  return dir + "/rackwise.yaml";
}

std::string RackwiseSelect::LastGoodPath() const { return StateSavePath(kLastGoodName); }

std::vector<SlurmNode> RackwiseSelect::SlurmNodes() const {
  std::vector<SlurmNode> nodes(node_record_count > 0 ? node_record_count : 0);
  for (int i = 0; i < node_record_count; ++i) {
    const node_record_t* node = node_record_table_ptr[i];
    if (!node || !node->name) continue;
    nodes[i].name = node->name;
    const char* gres = node->gres ? node->gres : (node->config_ptr ? node->config_ptr->gres : nullptr);
    nodes[i].gpus = gres ? GpusInGresString(gres) : 0;
  }
  return nodes;
}

absl::Status RackwiseSelect::UseDescription(const std::string& text, const std::string& file) {
  absl::StatusOr<std::unique_ptr<ClusterModel>> model = ClusterModel::FromYaml(text, file, SlurmNodes());
  if (!model.ok()) return model.status();
  shared_.reset();  // it points at the model being replaced (its thread stops within a lock slice)
  unconfirmed_.Clear();
  model_ = *std::move(model);
  statically_feasible_.clear();
  loaded_text_ = text;
  mismatch_.clear();
  health_cache_.assign(model_->topology().nodes().size(), NodeHealth::kUp);
  synced_at_ = 0;  // a new ledger: read every node's health at the next decision
  usable_nodes_.reset();
  ConfigureTelemetryLocked(loaded_text_, file);
  ConfigureSharedLedgerLocked(loaded_text_, file);
  info("rackwise: loaded %s: %zu nodes, %zu NVLink domains, %zu racks, %zu power domains", file.c_str(),
       model_->topology().nodes().size(), model_->topology().domains().size(), model_->topology().racks().size(),
       model_->topology().power_domains().size());
  return absl::OkStatus();
}

void RackwiseSelect::SaveLastGood() const {
  const std::string path = LastGoodPath();
  if (path.empty()) return;
  if (absl::StatusOr<std::string> saved = ReadFile(path); saved.ok() && *saved == loaded_text_) return;
  const std::string tmp = path + ".new";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << loaded_text_;
    out.flush();
    if (!out) {
      error("rackwise: cannot save the accepted description to %s: %s", tmp.c_str(), std::strerror(errno));
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error("rackwise: cannot save the accepted description to %s: %s", path.c_str(), std::strerror(errno));
  }
}

absl::Status RackwiseSelect::LoadModel(bool force) {
  const std::string path = DescriptionPath();
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  if (!force && model_ && *text == loaded_text_ && mismatch_.empty()) return absl::OkStatus();
  if (!force && model_ && *text == rejected_text_) return absl::OkStatus();  // rejected already, logged then
  absl::Status status = UseDescription(*text, path);
  if (!status.ok()) {
    rejected_text_ = *text;
    return status;
  }
  rejected_text_.clear();
  SaveLastGood();
  return absl::OkStatus();
}

int RackwiseSelect::NodeInit() {
  std::lock_guard lock(mu_);
  gpu_plugin_id_ = gres_build_id(const_cast<char*>("gpu"));
  absl::Status status = LoadModel(/*force=*/true);
  if (status.ok()) {
    RebuildLedgerLocked();
    StartStatePublisherLocked();
    return SLURM_SUCCESS;
  }
  error("rackwise: rejected the cluster description: %s", std::string(status.message()).c_str());
  // The node table may have been rebuilt: the description in force (same process) or the last accepted one
  // (a fresh slurmctld) is compiled again against it.
  std::string previous = loaded_text_, previous_file = DescriptionPath();
  if (previous.empty() && !LastGoodPath().empty()) {
    if (absl::StatusOr<std::string> saved = ReadFile(LastGoodPath()); saved.ok()) {
      previous = *std::move(saved);
      previous_file = LastGoodPath();
    }
  }
  if (previous.empty()) {
    error("rackwise: refusing to start: %s (no accepted description saved in StateSaveLocation to fall back on)",
          std::string(status.message()).c_str());
    return SLURM_ERROR;
  }
  absl::Status fallback = UseDescription(previous, previous_file);
  if (fallback.ok()) {
    error(
        "rackwise: keeping the last accepted description (%s) and placing as before; fix %s and run "
        "scontrol reconfigure",
        previous_file == DescriptionPath() ? "the one in force" : previous_file.c_str(), DescriptionPath().c_str());
    RebuildLedgerLocked();
    StartStatePublisherLocked();
    return SLURM_SUCCESS;
  }
  if (!model_) {
    error("rackwise: refusing to start: the last accepted description no longer fits slurm.conf either: %s",
          std::string(fallback.message()).c_str());
    return SLURM_ERROR;
  }
  // slurm.conf changed under every description we have: the old index map may no longer hold. Keep the caps,
  // place nothing new until a description that fits is loaded.
  mismatch_ = absl::StrCat("rackwise: ", status.message(), " (fix it and run scontrol reconfigure)");
  error("%s; no description fits slurm.conf's nodes, holding GPU jobs", mismatch_.c_str());
  return SLURM_SUCCESS;
}

void RackwiseSelect::Reconfigure() {
  std::lock_guard lock(mu_);
  if (!model_) return;
  absl::Status status = LoadModel(/*force=*/false);
  if (!status.ok()) {
    error("rackwise: rejected the cluster description, keeping the one in force: %s",
          std::string(status.message()).c_str());
  }
  RebuildLedgerLocked();
  StartStatePublisherLocked();  // a new telemetry interval sets the publishing interval
}

}  // namespace rackwise::slurm
