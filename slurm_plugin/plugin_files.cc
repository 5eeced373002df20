// SPDX-License-Identifier: GPL-2.0-or-later
// select/rackwise_cons_tres: where its files are (plugin_files.h).
#include "plugin_files.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
// Slurm last (see slurm_headers.h).
#include "slurm_headers.h"

namespace rackwise::slurm {

std::string DescriptionPath() {
  std::string conf = slurm_conf.slurm_conf ? slurm_conf.slurm_conf : "";
  if (conf.empty()) {
    const char* env = getenv("SLURM_CONF");
    conf = env ? env : "/etc/slurm/slurm.conf";
  }
  const size_t slash = conf.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : conf.substr(0, slash);
  return dir + "/rackwise.yaml";
}

std::string StateSavePath(absl::string_view name) {
  if (slurm_conf.state_save_location == nullptr || *slurm_conf.state_save_location == '\0') return "";
  return absl::StrCat(slurm_conf.state_save_location, "/", name);
}

}  // namespace rackwise::slurm
