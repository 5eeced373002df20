// `rackwise trace`: write job traces for `rackwise simulate`.
//   rackwise trace generate --mix training|research|inference --jobs N --seed S --gpus-cluster G [--load X]
//                           [--cluster FILE]
//   rackwise trace convert --format philly IN [--node-gpus K] [--virtual-cluster ID] [--max-jobs N] [--cluster FILE]
// Output is the trace CSV on stdout (or --output FILE); diagnostics go to stderr as FILE:LINE: message. With
// --cluster, jobs that cluster can never run are reported on stderr as warnings (the trace is still written).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <optional>
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

// Everything either subcommand's flags set; `--cluster` and `--output` serve both.
struct TraceFlags {
  std::string output, cluster_path;
  std::string mix_name = "research";
  TraceGeneratorParams generate;
  CLI::Option* node_gpus = nullptr;  // to tell --node-gpus given from its default
  std::string format, input;
  PhillyConvertParams convert;
};

CLI::App* AddGenerateCommand(CLI::App& app, TraceFlags* f) {
  CLI::App* gen = app.add_subcommand("generate", "a synthetic trace with a documented mix");
  TraceGeneratorParams& gp = f->generate;
  gen->add_option("--mix", f->mix_name, "training | research | inference")->required();
  gen->add_option("--jobs", gp.jobs, "number of jobs")->required();
  gen->add_option("--seed", gp.seed, "random seed (same seed, same trace)")->required();
  gen->add_option("--gpus-cluster", gp.cluster_gpus,
                  "GPUs of the target cluster (caps sizes, sets the rate; default: --cluster's)");
  f->node_gpus = gen->add_option("--node-gpus", gp.node_gpus,
                                 "GPUs per node of the target cluster (8 HGX, 4 NVL72; default: "
                                 "--cluster's largest node, else 8)");
  gen->add_option("--cluster", f->cluster_path, "warn about jobs this cluster description can never run");
  gen->add_option("--load", gp.load, "offered load: GPU-seconds asked / (cluster GPUs x span), default 0.9");
  gen->add_option("--watts-fraction", gp.watts_fraction, "share of jobs that declare watts_per_gpu (0..1)");
  gen->add_option("--watts-per-gpu", gp.watts_per_gpu, "what those jobs declare");
  return gen;
}

void AddConvertCommand(CLI::App& app, TraceFlags* f) {
  CLI::App* conv = app.add_subcommand("convert", "convert a public trace to the rackwise CSV");
  conv->add_option("--format", f->format, "philly")->required();
  conv->add_option("input", f->input, "the source file")->required();
  conv->add_option("--node-gpus", f->convert.node_gpus, "GPUs per node of the target cluster (8)");
  conv->add_option("--virtual-cluster", f->convert.virtual_cluster, "keep only this Philly virtual cluster");
  conv->add_option("--max-jobs", f->convert.max_jobs, "keep the first N jobs by submit time");
  conv->add_option("--cluster", f->cluster_path, "warn about jobs this cluster description can never run");
}

// `trace generate`: the cluster's size and node shape, when given, fill in what the flags left out.
int Generate(TraceFlags& f, const std::optional<Session>& cluster) {
  TraceGeneratorParams& gp = f.generate;
  if (cluster && gp.cluster_gpus == 0) gp.cluster_gpus = cluster->topology->total_gpus();
  if (cluster && f.node_gpus->count() == 0) gp.node_gpus = cluster->topology->max_gpus_per_node();
  if (gp.cluster_gpus == 0) {
    std::fprintf(stderr, "rackwise trace generate: --gpus-cluster or --cluster is required\n");
    return kExitUsage;
  }
  absl::StatusOr<TraceMix> mix = ParseTraceMix(f.mix_name);
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
  return EmitChecked(*jobs, f.output, cluster, f.cluster_path, "rackwise trace generate");
}

// `trace convert`: a public trace (Philly's is the one format so far) into the rackwise CSV.
int Convert(const TraceFlags& f, const std::optional<Session>& cluster) {
  if (f.format != "philly") {
    std::fprintf(stderr, "rackwise trace convert: --format: unknown format '%s' (philly)\n", f.format.c_str());
    return kExitUsage;
  }
  std::ifstream in(f.input, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "%s: cannot open the trace file\n", f.input.c_str());
    return kExitInvalidInput;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  Diagnostics diags;
  absl::StatusOr<std::vector<TraceJob>> jobs = ConvertPhillyTrace(buffer.str(), f.input, f.convert, &diags);
  if (!jobs.ok()) {
    for (const Diagnostic& d : diags) std::fprintf(stderr, "%s\n", d.ToString().c_str());
    if (diags.empty())
      std::fprintf(stderr, "rackwise trace convert: %s\n", std::string(jobs.status().message()).c_str());
    return kExitInvalidInput;
  }
  return EmitChecked(*jobs, f.output, cluster, f.cluster_path, "rackwise trace convert");
}

int RunTrace(int argc, char** argv) {
  CLI::App app{"Generate or convert job traces (CSV: " + std::string(kTraceHeader) + ")", "trace"};
  app.require_subcommand(1);
  TraceFlags flags;
  app.add_option("-o,--output", flags.output, "write here instead of stdout");
  CLI::App* gen = AddGenerateCommand(app, &flags);
  AddConvertCommand(app, &flags);
  if (std::optional<int> rc = ParseCommandFlags(app, argc, argv)) return *rc;
  std::optional<Session> cluster;
  if (!flags.cluster_path.empty()) {
    cluster = LoadSession(SessionFlags{flags.cluster_path, "", false});
    if (!cluster) return kExitInvalidInput;
  }
  return gen->parsed() ? Generate(flags, cluster) : Convert(flags, cluster);
}

}  // namespace

RACKWISE_REGISTER_COMMAND(trace, "trace", "generate or convert job traces for simulate", RunTrace);

}  // namespace rackwise::cli
