// The rackwise CLI's subcommands. Each lives in its own cmd_<name>.cc and registers itself here, so main()
// only dispatches and adding a command touches no shared file.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace rackwise::cli {

// Exit codes scripts can rely on (documented in docs/reference.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalidInput = 1;  // a file or value failed validation; diagnostics on stderr
inline constexpr int kExitUsage = 2;         // bad flags
inline constexpr int kExitRefused = 3;       // the job cannot be placed now (it could be later)
inline constexpr int kExitUnresolvable = 4;  // the job can never be placed on this cluster
inline constexpr int kExitInternal = 70;     // a bug: please report

struct Command {
  std::string name;
  std::string summary;                            // one line for `rackwise --help`
  std::function<int(int argc, char** argv)> run;  // argv[0] is the command name
};

std::vector<Command>& CommandRegistry();

struct CommandRegistrar {
  explicit CommandRegistrar(Command command) { CommandRegistry().push_back(std::move(command)); }
};

#define RACKWISE_REGISTER_COMMAND(var, ...) \
  static ::rackwise::cli::CommandRegistrar var##_registrar(::rackwise::cli::Command{__VA_ARGS__})

// Parses a command's flags with `app`. Returns the exit code when parsing already ends the command (--help or
// --version printed: kExitOk; a bad flag, said on stderr: kExitUsage), else nullopt: the command goes on.
std::optional<int> ParseCommandFlags(CLI::App& app, int argc, char** argv);

// The built-in example description (examples/demo.yaml), for commands run without --cluster.
std::string DefaultClusterPath();

}  // namespace rackwise::cli
