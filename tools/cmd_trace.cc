// `rackwise trace`: write job traces for `rackwise simulate`.
//   rackwise trace generate --mix training|research|inference --jobs N --seed S --gpus-cluster G [--load X]
//                           [--cluster FILE]
//   rackwise trace convert --format philly IN [--node-gpus K] [--virtual-cluster ID] [--max-jobs N] [--cluster FILE]
// Output is the trace CSV on stdout (or --output FILE); diagnostics go to stderr as FILE:LINE: message. With
// --cluster, jobs that cluster can never run are reported on stderr as warnings (the trace is still written).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "command.h"
#include "placement_session.h"
#include "rackwise/trace.h"
#include "rackwise/trace_fit.h"
#include "rackwise/trace_generator.h"
#include "rackwise/trace_philly.h"
#include "trace_fit_format.h"

namespace rackwise::cli {
namespace {

int Emit(const std::vector<TraceJob>& jobs, const std::string& output) {
  const std::string csv = TraceToCsv(jobs);
  if (output.empty() || output == "-") {
    std::fwrite(csv.data(), 1, csv.size(), stdout);
    return kExitOk;
  }
  std::ofstream out(output, std::ios::binary);
  out << csv;
  out.close();
  if (!out) {
    std::fprintf(stderr, "rackwise trace: cannot write %s\n", output.c_str());
    return kExitInvalidInput;
  }
  return kExitOk;
}

// With a cluster: warn about every job it can never run (a trace made for other nodes, or sizes it cannot hold).
int EmitChecked(const std::vector<TraceJob>& jobs, const std::string& output, const std::optional<Session>& cluster,
                const std::string& cluster_path, const std::string& who) {
  if (cluster) WarnTraceMisfits(CheckTraceFits(*cluster->topology, jobs), who, cluster_path);
  return Emit(jobs, output);
}

int RunTrace(int argc, char** argv) {
  CLI::App app{"Generate or convert job traces (CSV: " + std::string(kTraceHeader) + ")", "trace"};
  app.require_subcommand(1);
  std::string output;
  app.add_option("-o,--output", output, "write here instead of stdout");

  CLI::App* gen = app.add_subcommand("generate", "a synthetic trace with a documented mix");
  std::string mix_name = "research";
  TraceGeneratorParams gp;
  gen->add_option("--mix", mix_name, "training | research | inference")->required();
  gen->add_option("--jobs", gp.jobs, "number of jobs")->required();
  gen->add_option("--seed", gp.seed, "random seed (same seed, same trace)")->required();
  gen->add_option("--gpus-cluster", gp.cluster_gpus,
                  "GPUs of the target cluster (caps sizes, sets the rate; default: --cluster's)");
  CLI::Option* node_gpus = gen->add_option("--node-gpus", gp.node_gpus,
                                           "GPUs per node of the target cluster (8 HGX, 4 NVL72; default: "
                                           "--cluster's largest node, else 8)");
  std::string cluster_path;
  gen->add_option("--cluster", cluster_path, "warn about jobs this cluster description can never run");
  gen->add_option("--load", gp.load, "offered load: GPU-seconds asked / (cluster GPUs x span), default 0.9");
  gen->add_option("--watts-fraction", gp.watts_fraction, "share of jobs that declare watts_per_gpu (0..1)");
  gen->add_option("--watts-per-gpu", gp.watts_per_gpu, "what those jobs declare");

  CLI::App* conv = app.add_subcommand("convert", "convert a public trace to the rackwise CSV");
  std::string format, input;
  PhillyConvertParams pp;
  conv->add_option("--format", format, "philly")->required();
  conv->add_option("input", input, "the source file")->required();
  conv->add_option("--node-gpus", pp.node_gpus, "GPUs per node of the target cluster (8)");
  conv->add_option("--virtual-cluster", pp.virtual_cluster, "keep only this Philly virtual cluster");
  conv->add_option("--max-jobs", pp.max_jobs, "keep the first N jobs by submit time");
  conv->add_option("--cluster", cluster_path, "warn about jobs this cluster description can never run");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  std::optional<Session> cluster;
  if (!cluster_path.empty()) {
    cluster = LoadSession(SessionFlags{cluster_path, "", false});
    if (!cluster) return kExitInvalidInput;
  }
  if (gen->parsed()) {
    if (cluster && gp.cluster_gpus == 0) gp.cluster_gpus = cluster->topology->total_gpus();
    if (cluster && node_gpus->count() == 0) gp.node_gpus = cluster->topology->max_gpus_per_node();
    if (gp.cluster_gpus == 0) {
      std::fprintf(stderr, "rackwise trace generate: --gpus-cluster or --cluster is required\n");
      return kExitUsage;
    }
    absl::StatusOr<TraceMix> mix = ParseTraceMix(mix_name);
    if (!mix.ok()) {
      std::fprintf(stderr, "rackwise trace generate: --mix: %s\n", std::string(mix.status().message()).c_str());
      return kExitUsage;
    }
    gp.mix = *mix;
    absl::StatusOr<std::vector<TraceJob>> jobs = GenerateTrace(gp);
    if (!jobs.ok()) {
      std::fprintf(stderr, "rackwise trace generate: %s\n", std::string(jobs.status().message()).c_str());
      return kExitUsage;
    }
    return EmitChecked(*jobs, output, cluster, cluster_path, "rackwise trace generate");
  }
  if (format != "philly") {
    std::fprintf(stderr, "rackwise trace convert: --format: unknown format '%s' (philly)\n", format.c_str());
    return kExitUsage;
  }
  std::ifstream in(input, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open the trace file\n", input.c_str());
    return kExitInvalidInput;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  Diagnostics diags;
  absl::StatusOr<std::vector<TraceJob>> jobs = ConvertPhillyTrace(buffer.str(), input, pp, &diags);
  if (!jobs.ok()) {
    for (const Diagnostic& d : diags) std::fprintf(stderr, "%s\n", d.ToString().c_str());
    if (diags.empty())
      std::fprintf(stderr, "rackwise trace convert: %s\n", std::string(jobs.status().message()).c_str());
    return kExitInvalidInput;
  }
  return EmitChecked(*jobs, output, cluster, cluster_path, "rackwise trace convert");
}

}  // namespace

RACKWISE_REGISTER_COMMAND(trace, "trace", "generate or convert job traces for simulate", RunTrace);

}  // namespace rackwise::cli
