// SPDX-License-Identifier: GPL-2.0-or-later
// The cluster description select/rackwise_cons_tres places by: rackwise.yaml, read at startup, at restart and at
// reconfigure.
//
// A bad description never takes slurmctld down and never stops placement once a good one was accepted: every
// accepted description is saved in StateSaveLocation (rackwise.last-good.yaml), and a rejected file (logged
// with FILE:LINE) leaves the description in force, or after a restart (and, since Slurm 23.11, after every
// `scontrol reconfigure`, which starts a fresh slurmctld) the saved one. Only a first start with no good
// description refuses. GPU jobs are held only when no description at all fits slurm.conf's nodes.
//
// This class decides which text is put in force and keeps what that takes (the text in force, the last one
// refused, the mismatch with slurm.conf); compiling a text and replacing everything drawn from it is the plugin's
// (the UseFn each call is given).
//
// Thread safety: none of its own. Every call is made under the select plugin's mutex (node_init, reconfigure,
// and job_test reading mismatch()), which guards its state.
#pragma once

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "cluster_model.h"

namespace rackwise::slurm {

// slurm.conf's nodes as Slurm's node table has them, by Slurm index (the description is compiled against them).
std::vector<SlurmNode> SlurmNodes();

class DescriptionInForce {
 public:
  // Compiles `text` (from `file`) against slurm.conf's nodes and puts it in force; on error nothing changes.
  using UseFn = absl::FunctionRef<absl::Status(const std::string& text, const std::string& file)>;
  enum class Start {
    kInForce,  // rackwise.yaml, or the description it falls back on, is in force: rebuild from it
    kHolding,  // no description fits slurm.conf's nodes: the old model's caps stay, GPU jobs are held
    kRefused,  // no description at all: slurmctld must not start
  };

  // At node_init (startup, restart, a reconfigure that rebuilds the node table): rackwise.yaml, else the description
  // in force (`have_model`: one was put in force in this process) or the last accepted one, compiled again. Every
  // refusal is logged.
  Start StartLocked(bool have_model, UseFn use);
  // At reconfigure, with a description in force: re-reads rackwise.yaml and puts it in force if it changed (an
  // unchanged file that already fits is left as it is, a file refused already is not tried again). On error nothing
  // changes (the description in force stays).
  absl::Status ReloadLocked(UseFn use) { return LoadLocked(/*force=*/false, use); }

  // The file content in force ("" before the first).
  const std::string& text() const { return loaded_text_; }
  // Non-empty: slurm.conf changed under a description that no longer fits (the reason GPU jobs are held).
  const std::string& mismatch() const { return mismatch_; }

 private:
  // Reads rackwise.yaml and puts it in force. Without `force`, an unchanged file that already fits is left as it
  // is; on error nothing changes.
  absl::Status LoadLocked(bool force, UseFn use);
  // Puts `text` in force through `use`, and remembers it.
  absl::Status UseLocked(const std::string& text, const std::string& file, UseFn use);
  void SaveLastGood() const;

  std::string loaded_text_;    // the file content the model was built from, to skip unchanged reloads
  std::string rejected_text_;  // the last file content refused, so that it is not retried and relogged
  std::string mismatch_;       // non-empty: slurm.conf changed under a description that no longer fits
};

}  // namespace rackwise::slurm
