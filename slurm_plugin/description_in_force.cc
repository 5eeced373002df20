// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres inside slurmctld: the description in force (description_in_force.h).
#include "description_in_force.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "plugin_files.h"
// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

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

std::string LastGoodPath() { return StateSavePath(kLastGoodName); }  // empty without a StateSaveLocation

}  // namespace

std::vector<SlurmNode> SlurmNodes() {
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

absl::Status DescriptionInForce::UseLocked(const std::string& text, const std::string& file, UseFn use) {
  absl::Status status = use(text, file);
  if (!status.ok()) return status;
  loaded_text_ = text;
  mismatch_.clear();
  return absl::OkStatus();
}

void DescriptionInForce::SaveLastGood() const {
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

absl::Status DescriptionInForce::LoadLocked(bool force, UseFn use) {
  const std::string path = DescriptionPath();
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return text.status();
  // Without `force` (reconfigure) a description is in force.
  if (!force && *text == loaded_text_ && mismatch_.empty()) return absl::OkStatus();
  if (!force && *text == rejected_text_) return absl::OkStatus();  // rejected already, logged then
  absl::Status status = UseLocked(*text, path, use);
  if (!status.ok()) {
    rejected_text_ = *text;
    return status;
  }
  rejected_text_.clear();
  SaveLastGood();
  return absl::OkStatus();
}

DescriptionInForce::Start DescriptionInForce::StartLocked(bool have_model, UseFn use) {
  absl::Status status = LoadLocked(/*force=*/true, use);
  if (status.ok()) return Start::kInForce;
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
    return Start::kRefused;
  }
  absl::Status fallback = UseLocked(previous, previous_file, use);
  if (fallback.ok()) {
    error(
        "rackwise: keeping the last accepted description (%s) and placing as before; fix %s and run "
        "scontrol reconfigure",
        previous_file == DescriptionPath() ? "the one in force" : previous_file.c_str(), DescriptionPath().c_str());
    return Start::kInForce;
  }
  if (!have_model) {
    error("rackwise: refusing to start: the last accepted description no longer fits slurm.conf either: %s",
          std::string(fallback.message()).c_str());
    return Start::kRefused;
  }
  // slurm.conf changed under every description we have: the old index map may no longer hold. Keep the caps,
  // place nothing new until a description that fits is loaded.
  mismatch_ = absl::StrCat("rackwise: ", status.message(), " (fix it and run scontrol reconfigure)");
  error("%s; no description fits slurm.conf's nodes, holding GPU jobs", mismatch_.c_str());
  return Start::kHolding;
}

}  // namespace rackwise::slurm
