// glass kernels: a backend's kernel table (op, operand types, tier; the cpu matmuls' repacked layouts
// and decode walks), as plans choose from it.
#include <fmt/format.h>

#include <memory>

#include "cli/common.h"
#include "glass/tools.h"

namespace glass::cli {

void add_kernels_command(CLI::App& app, int& exit_code) {
  auto backend = std::make_shared<std::string>("cpu");
  CLI::App* cmd = app.add_subcommand("kernels", "list a backend's kernels: op, operand types, tier, layout");
  cmd->add_option("--backend", *backend, "cpu or ref")->capture_default_str();
  cmd->callback([backend, &exit_code] {
    auto lines = kernel_table(*backend);
    if (!lines) {
      exit_code = report(lines.error());
      return;
    }
    for (const std::string& line : *lines) fmt::print("{}\n", line);
    exit_code = 0;
  });
}

}  // namespace glass::cli
