// glass chat: an interactive multi-turn conversation in the terminal. Each line read is a user
// message; the reply streams as it is generated. The session keeps the conversation's KV cache,
// so a turn evaluates only the new tokens. Ctrl-C cancels the reply being generated (the
// conversation continues); Ctrl-C at the prompt, Ctrl-D or /exit ends the program.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>

#include "cli/common.h"

namespace glass::cli {
namespace {

struct ChatOptions {
  ModelOptions model;
  GenerateConfig gen;
  std::string system;
  bool verbose = false;
};

// The SIGINT handler only sets flags; the loop reads them.
std::atomic<bool>* g_cancel = nullptr;
std::atomic<bool> g_generating{false};
std::atomic<bool> g_quit{false};

extern "C" void on_sigint(int) {
  if (g_generating.load() && g_cancel != nullptr) {
    g_cancel->store(true);
  } else {
    g_quit.store(true);  // the line read returns (EINTR: installed without SA_RESTART)
  }
}

int chat(ChatOptions o) {
  auto model = load_or_report(o.model);
  if (!model) return 1;
  if (model->chat_template().empty())
    return report(make_error(
        ErrorCode::InvalidArgument,
        fmt::format("{} has no chat template; give one with --chat-template-file", model->info().path)));
  auto session = model->new_session();
  if (!session) return report(session.error());
  o.gen.cancel = std::make_shared<std::atomic<bool>>(false);
  g_cancel = o.gen.cancel.get();
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: Ctrl-C at the prompt interrupts the read
  struct sigaction previous {};
  sigaction(SIGINT, &action, &previous);

  std::vector<ChatMessage> conversation;
  if (!o.system.empty()) conversation.push_back({"system", o.system});
  const bool tty = isatty(fileno(stdin)) != 0;
  std::string line;
  while (!g_quit.load()) {
    if (tty) fmt::print("> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line) || line == "/exit") break;
    if (line.empty()) continue;
    conversation.push_back({"user", line});
    o.gen.cancel->store(false);
    g_generating.store(true);
    auto r = (*session)->chat(conversation, o.gen, [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      return true;
    });
    g_generating.store(false);
    std::fputc('\n', stdout);
    if (!r) {
      conversation.pop_back();
      report(r.error());
      continue;
    }
    conversation.push_back({"assistant", r->text});
    if (o.verbose || r->finish == FinishReason::Cancelled)
      fmt::print(stderr, "[{} new prompt tokens, {} generated, {:.1f} tok/s, {} cached, finish: {}]\n",
                 r->timings.n_prompt_tokens, r->timings.n_decoded,
                 r->timings.decode_ms > 0
                     ? 1000.0 * static_cast<double>(r->timings.n_decoded) / r->timings.decode_ms
                     : 0.0,
                 (*session)->n_past(), finish_reason_name(r->finish));
  }
  sigaction(SIGINT, &previous, nullptr);
  g_cancel = nullptr;
  return 0;
}

}  // namespace

void add_chat_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ChatOptions>();
  o->gen.max_tokens = 512;
  CLI::App* cmd = app.add_subcommand("chat", "interactive multi-turn chat (Ctrl-C cancels a reply)");
  add_model_options(*cmd, o->model);
  add_sampling_options(*cmd, o->gen);
  cmd->add_option("-n,--n-predict", o->gen.max_tokens, "most tokens per reply")->capture_default_str();
  cmd->add_option("--system", o->system, "system message that starts the conversation");
  cmd->add_flag("-v,--verbose", o->verbose, "print token counts and speed after each reply");
  cmd->callback([o, &exit_code] { exit_code = chat(*o); });
}

}  // namespace glass::cli
