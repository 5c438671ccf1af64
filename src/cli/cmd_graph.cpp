// glass graph: print the model's graph (as built, or as compiled with the rewrites that fired).
#include <fmt/format.h>

#include "cli/common.h"

namespace glass::cli {
namespace {

struct GraphOptions {
  ModelOptions model;
  std::string format = "text";
  bool after_rewrites = false;
};

int print_graph(const GraphOptions& o) {
  int load_rc = 1;
  auto model = load_or_report(o.model, load_rc);
  if (!model) return load_rc;
  const GraphFormat f = o.format == "dot"    ? GraphFormat::Dot
                        : o.format == "json" ? GraphFormat::Json
                                             : GraphFormat::Text;
  auto text = model->graph(f, o.after_rewrites);
  if (!text) return report(text.error());
  fmt::print("{}", *text);
  return 0;
}

}  // namespace

void add_graph_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<GraphOptions>();
  CLI::App* cmd = app.add_subcommand("graph", "print the model's graph");
  add_model_options(*cmd, o->model);
  cmd->add_option("--format", o->format, "text, dot or json")
      ->check(CLI::IsMember({"text", "dot", "json"}))
      ->capture_default_str();
  cmd->add_flag("--after-rewrites", o->after_rewrites,
                "show the compiled (prefill) graph and the rewrites that fired; with --decompose, composites "
                "are lowered");
  cmd->callback([o, &exit_code] { exit_code = print_graph(*o); });
}

}  // namespace glass::cli
