// SPDX-License-Identifier: GPL-2.0-or-later
// spank_rackwise.so: adds `--nvlink=required|preferred|none` and `--gpu-watts=N` to sbatch, srun and salloc.
// Values are checked where the user types them (a bad value fails the submission with a message) and are
// stored in the job's spank_job_env as RACKWISE_NVLINK / RACKWISE_GPU_WATTS, which slurmctld keeps with the
// job; select/rackwise_cons_tres reads them back from there. Defaults and limits are the administrator's, in
// rackwise.yaml's policy block.
//
// In slurmd (slurm_spank_job_prolog / _epilog, run as root), it holds the job's GPUs on the node to the watts
// per GPU the select plugin counted and gives the previous limits back at the end, through the helper
// rackwise-slurm-gpu-power installed beside it (gpu_power_main.cc; settings in rackwise.yaml's
// power_enforcement). Fail closed: when a limit the job needs
// cannot be set, the prolog fails (Slurm requeues the job) after draining the node with a reason naming
// rackwise and the cause, which Slurm keeps (it only writes its own "Prolog error" on a node not yet drained).
//
// Licensed under the GNU General Public License, version 2 or (at your option) any later version, like the
// Slurm it runs inside.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "job_options.h"

extern "C" {  // spank.h declares the plugin entry points without C linkage of its own
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

namespace {

std::string g_nvlink;     // validated value, empty when not given
std::string g_gpu_watts;  // validated value, empty when not given

int OnNvlink(int, const char* optarg, int) noexcept {
  try {
    absl::StatusOr<rackwise::Locality> locality = rackwise::slurm::ParseNvlink(optarg ? optarg : "");
    if (!locality.ok()) {
      slurm_error("rackwise: %s", std::string(locality.status().message()).c_str());
      return -1;
    }
    g_nvlink = rackwise::slurm::LocalityName(*locality);
    return 0;
  } catch (...) {
    slurm_error("rackwise: --nvlink: internal error");
    return -1;
  }
}

int OnGpuWatts(int, const char* optarg, int) noexcept {
  try {
    absl::StatusOr<double> watts = rackwise::slurm::ParseGpuWatts(optarg ? optarg : "");
    if (!watts.ok()) {
      slurm_error("rackwise: %s", std::string(watts.status().message()).c_str());
      return -1;
    }
    g_gpu_watts = optarg;
    return 0;
  } catch (...) {
    slurm_error("rackwise: --gpu-watts: internal error");
    return -1;
  }
}

struct spank_option g_options[] = {
    {const_cast<char*>("nvlink"), const_cast<char*>("required|preferred|none"),
     const_cast<char*>("rackwise: keep the job in the fewest NVLink domains (required: wait for them; "
                       "preferred: start spread out if it must; none: fill fragments)"),
     1, 0, OnNvlink},
    {const_cast<char*>("gpu-watts"), const_cast<char*>("N"),
     const_cast<char*>("rackwise: watts each of the job's GPUs draws (default: the node type's full-load draw)"), 1, 1,
     OnGpuWatts},
};

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// Runs `argv` (argv[0] a path) with this process's environment (the job script's). Returns its exit status (-1
// if it could not run or died) and the first line it printed (stdout, and stderr too with `with_stderr`).
int Run(const std::vector<std::string>& argv, bool with_stderr, std::string& output) {
  int pipe_fds[2];
  if (argv.empty() || argv[0].empty() || pipe2(pipe_fds, O_CLOEXEC) != 0) {
    output = "cannot run " + (argv.empty() ? std::string("a program") : argv[0]);
    return -1;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    if (with_stderr) dup2(pipe_fds[1], STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  char buffer[4096];
  ssize_t n = 0;
  while (pid > 0 && (n = read(pipe_fds[0], buffer, sizeof(buffer))) != 0) {  // to EOF, so that it never blocks
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (output.size() < sizeof(buffer)) output.append(buffer, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  output = output.substr(0, output.find('\n'));
  if (pid < 0 || !WIFEXITED(status)) {
    if (output.empty()) output = argv[0] + (pid < 0 ? ": cannot fork" : ": killed");
    return -1;
  }
  if (WEXITSTATUS(status) == 127 && output.empty()) output = "cannot run " + argv[0];
  return WEXITSTATUS(status);
}

// `name` in the directory of this plugin.
std::string BesideThisPlugin(const char* name) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&BesideThisPlugin), &info) == 0 || info.dli_fname == nullptr) return "";
  std::string path = info.dli_fname;
  const std::string::size_type slash = path.rfind('/');
  return (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) + "/" + name;
}

// The scontrol of the Slurm this process belongs to: the job prolog and epilog run in slurmstepd (or slurmd),
// <prefix>/sbin/..., whose clients are in <prefix>/bin. Empty if there is none.
std::string ScontrolPath() {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return "";
  std::string path(exe, static_cast<size_t>(n));
  for (int up = 0; up < 2; ++up) {
    const std::string::size_type slash = path.rfind('/');
    if (slash == std::string::npos) return "";
    path.resize(slash);
  }
  path += "/bin/scontrol";
  return access(path.c_str(), X_OK) == 0 ? path : "";
}

// Drains `node` with `reason` (prefixed "rackwise: "), so that no further job lands on GPUs whose power limit
// rackwise cannot hold, and the administrator sees why in sinfo -R / scontrol show node. Through scontrol, a
// client initialised as Slurm expects: in Slurm 24.11 the job prolog's process (slurmstepd) has not loaded the
// plugins a client API call needs, and the call would abort it.
void DrainNode(const std::string& node, const std::string& cause) {
  std::string reason = "rackwise: " + cause;
  if (reason.size() > 400) reason = reason.substr(0, 397) + "...";
  const std::string scontrol = ScontrolPath();
  if (!scontrol.empty()) {
    std::string output;
    if (Run({scontrol, "update", "nodename=" + node, "state=drain", "reason=" + reason}, true, output) == 0) {
      slurm_info("rackwise: drained %s: %s", node.c_str(), reason.c_str());
    } else {
      slurm_error("rackwise: cannot drain %s (%s): %s", node.c_str(), reason.c_str(), output.c_str());
    }
    return;
  }
  update_node_msg_t update;
  slurm_init_update_node_msg(&update);
  update.node_names = const_cast<char*>(node.c_str());
  update.node_state = NODE_STATE_DRAIN;
  update.reason = const_cast<char*>(reason.c_str());
  update.reason_uid = 0;
  if (slurm_update_node(&update) != SLURM_SUCCESS) {
    slurm_error("rackwise: cannot drain %s (%s): %s", node.c_str(), reason.c_str(), slurm_strerror(errno));
  } else {
    slurm_info("rackwise: drained %s: %s", node.c_str(), reason.c_str());
  }
}

// The GPU power work runs in rackwise-slurm-gpu-power, installed beside this plugin: it reads rackwise.yaml,
// whose protobuf schema must not be linked into this plugin (slurmd, sbatch and srun load the select plugin
// too, and protobuf aborts when two copies of one schema register in a process). plugstack.conf's
// `cache_dir=DIR` (where the node keeps the last rackwise.yaml it accepted) is passed on; other arguments are
// logged and ignored.
int RunHelper(const char* mode, int ac, char** av, std::string& output, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {BesideThisPlugin("rackwise-slurm-gpu-power"), mode};
  argv.insert(argv.end(), extra.begin(), extra.end());
  const std::string cache_dir = "cache_dir=";
  for (int i = 0; i < ac; ++i) {
    const std::string arg = av[i] ? av[i] : "";
    if (arg.compare(0, cache_dir.size(), cache_dir) == 0) {
      argv.push_back("--cache-dir=" + arg.substr(cache_dir.size()));
    } else {
      slurm_error("rackwise: plugstack.conf: unknown argument '%s' (expected cache_dir=DIR)", arg.c_str());
    }
  }
  return Run(argv, false, output);
}

// slurmd's node name (-N, for several slurmd on one host) and configuration file (-f) from its command line, for
// the helper at slurmd's start, where SLURMD_NODENAME and SLURM_CONF are not set. Empty where not given: the
// helper then uses the host name's node and Slurm's default configuration path.
std::vector<std::string> SlurmdIdentityFlags() {
  std::vector<std::string> args;
  if (FILE* f = std::fopen("/proc/self/cmdline", "re")) {
    std::string arg;
    for (int c; (c = std::fgetc(f)) != EOF;) {
      if (c != '\0') {
        arg += static_cast<char>(c);
        continue;
      }
      args.push_back(arg);
      arg.clear();
    }
    std::fclose(f);
  }
  std::string node = Env("SLURMD_NODENAME"), conf = Env("SLURM_CONF");
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "-N") node = args[i + 1];
    if (args[i] == "-f") conf = args[i + 1];
  }
  if (node.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof(host) - 1) == 0) node = std::string(host).substr(0, std::string(host).find('.'));
  }
  std::vector<std::string> flags;
  if (!node.empty()) flags.push_back("--node=" + node);
  if (!conf.empty()) flags.push_back("--slurm-conf=" + conf);
  return flags;
}

// slurmd's start (slurm_spank_init in slurmd's context): the node keeps the description it reads now, so that a
// rackwise.yaml broken before its first job still leaves it one to work from. Never fails slurmd (a bad file is
// only logged).
void KeepAcceptedDescription(int ac, char** av) {
  try {
    std::string output;
    if (RunHelper("accept", ac, av, output, SlurmdIdentityFlags()) == 0) {
      if (!output.empty()) slurm_info("rackwise: %s", output.c_str());
    } else {
      slurm_error("rackwise: cannot keep the node's accepted description: %s", output.c_str());
    }
  } catch (...) {
    slurm_error("rackwise: internal error while keeping the node's accepted description");
  }
}

// Exit status of rackwise-slurm-gpu-power: 0 the job may run here (output: what was done), 1 it must not
// (output: why); anything else is a failure of the helper, also fatal for the job on this node.
int JobScript(const char* mode, int ac, char** av) {
  const std::string job = Env("SLURM_JOB_ID");
  std::string output;
  const int status = RunHelper(mode, ac, av, output);
  if (status == 0) {
    if (!output.empty()) slurm_info("rackwise: job %s: %s", job.c_str(), output.c_str());
    return 0;
  }
  slurm_error("rackwise: job %s: %s", job.c_str(), output.c_str());
  DrainNode(Env("SLURMD_NODENAME"), "job " + job + ": " + output);
  return -1;
}

}  // namespace

// Built with -fvisibility=hidden: what Slurm looks up is made visible here, and the version script
// (spank.map) keeps everything else local.
#pragma GCC visibility push(default)
extern "C" {

extern const char plugin_name[] = "rackwise";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;

int slurm_spank_init(spank_t sp, int ac, char** av) {
  for (struct spank_option& option : g_options) {
    if (spank_option_register(sp, &option) != ESPANK_SUCCESS) {
      slurm_error("rackwise: cannot register --%s", option.name);
      return -1;
    }
  }
  if (spank_context() == S_CTX_SLURMD) KeepAcceptedDescription(ac, av);
  return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
  const spank_context_t context = spank_context();
  if (context != S_CTX_LOCAL && context != S_CTX_ALLOCATOR) return 0;
  if (!g_nvlink.empty() &&
      spank_job_control_setenv(sp, rackwise::slurm::kNvlinkEnv, g_nvlink.c_str(), 1) != ESPANK_SUCCESS) {
    slurm_error("rackwise: cannot pass --nvlink to the job");
    return -1;
  }
  if (!g_gpu_watts.empty() &&
      spank_job_control_setenv(sp, rackwise::slurm::kGpuWattsEnv, g_gpu_watts.c_str(), 1) != ESPANK_SUCCESS) {
    slurm_error("rackwise: cannot pass --gpu-watts to the job");
    return -1;
  }
  return 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char** av) {
  try {
    return JobScript("prolog", ac, av);
  } catch (...) {
    slurm_error("rackwise: internal error while setting GPU power limits");
    return -1;
  }
}

int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
  try {
    return JobScript("epilog", ac, av);
  } catch (...) {
    slurm_error("rackwise: internal error while restoring GPU power limits");
    return -1;
  }
}

}  // extern "C"
#pragma GCC visibility pop
