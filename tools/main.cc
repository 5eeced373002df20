// rackwise: command-line entry point. Dispatches to the registered subcommands; each one catches its own
// errors, and anything that still escapes is reported as an internal error instead of a crash.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>

#include <CLI/CLI.hpp>

#include "command.h"

namespace rackwise::cli {

std::vector<Command>& CommandRegistry() {
  static std::vector<Command> registry;
  return registry;
}

std::string DefaultClusterPath() {
  if (const char* env = std::getenv("RACKWISE_EXAMPLES_DIR")) return std::string(env) + "/demo.yaml";
  std::string source_tree = std::string(RACKWISE_EXAMPLES_DIR) + "/demo.yaml";
  std::error_code ec;
  if (std::filesystem::exists(source_tree, ec)) return source_tree;
  // Installed (ninja install, the Debian package): <prefix>/bin/rackwise -> <prefix>/share/doc/rackwise/examples.
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return source_tree;
  return (exe.parent_path().parent_path() / "share/doc/rackwise/examples/demo.yaml").string();
}

std::optional<int> ParseCommandFlags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  return std::nullopt;
}

namespace {

void PrintUsage(FILE* out) {
  std::fprintf(out, "usage: rackwise COMMAND [--help] [ARGS]\n\ncommands:\n");
  auto commands = CommandRegistry();
  std::sort(commands.begin(), commands.end(), [](const Command& a, const Command& b) { return a.name < b.name; });
  for (const Command& c : commands) std::fprintf(out, "  %-10s %s\n", c.name.c_str(), c.summary.c_str());
}

}  // namespace
}  // namespace rackwise::cli

int main(int argc, char** argv) {
  using namespace rackwise::cli;
  if (argc < 2) {
    PrintUsage(stderr);
    return kExitUsage;
  }
  if (!std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    PrintUsage(stdout);
    return kExitOk;
  }
  for (const Command& c : CommandRegistry()) {
    if (c.name != argv[1]) continue;
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rackwise %s: internal error: %s\n", argv[1], e.what());
      return kExitInternal;
    }
  }
  std::fprintf(stderr, "rackwise: unknown command '%s'\n\n", argv[1]);
  PrintUsage(stderr);
  return kExitUsage;
}
