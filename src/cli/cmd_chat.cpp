// glass chat: an interactive multi-turn conversation in the terminal. Each line read is a user
// message; the reply streams as it is generated. The session keeps the conversation's KV cache,
// so a turn evaluates only the new tokens. When the conversation no longer fits the context, the
// oldest exchanges after the system prompt (and those --keep pins) are dropped and the rest is
// re-rendered, so the chat goes on. Ctrl-C cancels the reply being generated (the conversation
// continues); Ctrl-C at the prompt, Ctrl-D or /exit ends the program. /clear, /save, /load, /help.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/chat.h"
#include "cli/chat_input.h"
#include "glass/files.h"
#include "glass/json.h"

namespace glass::cli {
namespace {

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

constexpr const char* kHelp =
    "/help        this list\n"
    "/clear       forget the conversation (the system prompt stays)\n"
    "/save FILE   write the conversation as JSON ({\"messages\": [...]}, as glass chat-template reads)\n"
    "/load FILE   continue a conversation /save wrote\n"
    "/exit        quit (also Ctrl-D, or Ctrl-C at the prompt)\n";

using Conversation = std::vector<ChatMessage>;

Result<size_t> count_tokens(const Model& model, const Conversation& c, bool generation_prompt) {
  auto text = model.apply_chat_template(c, generation_prompt);
  if (!text) return text.error();
  auto ids = model.tokenize(*text, /*add_special=*/true, /*parse_special=*/true);
  if (!ids) return ids.error();
  return ids->size();
}

// The index of the first message a context shift may drop: after the system prompt and the
// exchanges --keep pins.
Result<size_t> first_droppable(const Model& model, const Conversation& c, int32_t keep) {
  size_t start = !c.empty() && c[0].role == "system" ? 1 : 0;
  auto exchange_end = [&c](size_t i) {  // one past the replies that follow the user message at i
    size_t j = i + 1;
    while (j < c.size() && c[j].role != "user") ++j;
    return j;
  };
  if (keep == -1) return start < c.size() ? exchange_end(start) : start;
  while (keep > 0 && start < c.size()) {
    const size_t end = exchange_end(start);
    auto n =
        count_tokens(model, Conversation(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(end)), false);
    if (!n) return n.error();
    if (*n > static_cast<size_t>(keep)) break;
    start = end;
  }
  return start;
}

// Drops the oldest unpinned exchanges until the conversation and room for a reply fit the context.
// The last message (the new user turn) is never dropped: if it alone does not fit, an error.
Status fit_context(const Model& model, Conversation& c, const ChatOptions& o) {
  const auto n_ctx = static_cast<size_t>(model.info().n_ctx);
  // Room for a reply: -n, but at most a quarter of the context (a full context ends the reply).
  const size_t reserve = std::clamp<size_t>(static_cast<size_t>(std::max(o.g.gen.max_tokens, 1)), 1,
                                            std::max<size_t>(n_ctx / 4, 1));
  size_t dropped = 0;
  while (true) {
    auto n = count_tokens(model, c, true);
    if (!n) return n.error();
    if (*n + reserve <= n_ctx) break;
    auto from = first_droppable(model, c, o.keep);
    if (!from) return from.error();
    size_t to = *from + 1;
    while (to < c.size() && c[to].role != "user") ++to;
    if (to >= c.size())  // only the new message is left to drop
      return make_error(
          ErrorCode::CapacityExceeded,
          fmt::format("the conversation needs {} tokens (with room for a {}-token reply) but the "
                      "context is {}: shorten the message or the system prompt, or raise -c",
                      *n, reserve, n_ctx));
    c.erase(c.begin() + static_cast<std::ptrdiff_t>(*from), c.begin() + static_cast<std::ptrdiff_t>(to));
    ++dropped;
  }
  if (dropped > 0)
    info("context full ({} tokens): dropped the {} oldest exchange{}", n_ctx, dropped,
         dropped == 1 ? "" : "s");
  return {};
}

Status save_conversation(const Conversation& c, const std::string& path) {
  nlohmann::json messages = nlohmann::json::array();
  for (const ChatMessage& m : c) messages.push_back({{"role", m.role}, {"content", m.content}});
  const std::string text =
      nlohmann::json{{"messages", messages}}.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
      "\n";
  auto out = OutputFile::create(path, "/save");  // never through a planted symlink
  if (!out) return out.error();
  if (auto st = out->write(text.data(), text.size()); !st) return st;
  return out->commit();
}

Result<Conversation> load_conversation(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  auto parsed = parse_json_bounded<nlohmann::json>(*text, fmt::format("/load '{}'", path));
  if (!parsed) return make_error(ErrorCode::InvalidArgument, parsed.error().message);
  const nlohmann::json& j = *parsed;
  const auto bad = [&](const std::string& why) {
    return make_error(ErrorCode::InvalidArgument, fmt::format("/load '{}': {}", path, why));
  };
  const nlohmann::json* messages = j.is_array()                              ? &j
                                   : j.is_object() && j.contains("messages") ? &j["messages"]
                                                                             : nullptr;
  if (messages == nullptr || !messages->is_array()) return bad("expected {\"messages\": [...]}");
  Conversation c;
  for (const auto& m : *messages) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string())
      return bad("every message needs a string \"role\" and \"content\"");
    c.push_back({m["role"].get<std::string>(), m["content"].get<std::string>(), {}});
  }
  return c;
}

bool use_color(const std::string& mode) {
  return mode == "on" || (mode == "auto" && isatty(fileno(stdout)) != 0);
}

}  // namespace

void add_chat_flags(CLI::App& cmd, ChatOptions& o) {
  cmd.footer(
      std::string("llama.cpp's spellings: -sys = --system-prompt, -cnv = --conversation, -if = "
                  "--interactive-first,\n-st = --single-turn, -co = --color, -mli = --multiline-input.\n") +
      kGpuFooter);
  cmd.add_option("--system-prompt,--system", o.system, "system message that starts the conversation");
  cmd.add_option("--keep", o.keep,
                 "when the context fills, keep the exchanges within the conversation's first N tokens (the "
                 "system prompt is always kept; -1 = the first exchange too)")
      ->check(CLI::Range(-1, 1 << 24))
      ->capture_default_str();
  cmd.add_flag("--multiline-input", o.multiline,
               "every line continues the message; a line ending in \\ or / sends it (without "
               "this, a line ending in \\ continues onto the next)");
  cmd.add_flag("--single-turn", o.single_turn, "answer one message (the first prompt or line) and exit");
  cmd.add_option("--color", o.color, "colour the user's input: on, off or auto (on a terminal)")
      ->check(CLI::IsMember({"on", "off", "auto"}))
      ->expected(0, 1)
      ->default_str("off");
  cmd.add_flag("-v,--verbose", o.g.verbose,
               "print the seed, the sampler chain, and token counts and speed after each reply");
}

int run_chat(ChatOptions o) {
  if (o.color.empty()) o.color = "on";  // a bare --color
  if (Status st = check_generation_options(o.g); !st) return report(st.error());
  int load_rc = 1;
  auto model = load_or_report(o.model, load_rc);
  if (!model) return load_rc;
  if (model->chat_template().empty())
    return report(make_error(
        ErrorCode::InvalidArgument,
        fmt::format("{} has no chat template; give one with --chat-template-file", model->info().path)));
  if (Status st = prepare_generation(o.g, *model); !st) return report(st.error());
  if (o.g.escape) {
    o.system = process_escapes(o.system);
    o.first_prompt = process_escapes(o.first_prompt);
  }
  auto session = open_session(*model, o.model);
  if (!session) return report(session.error());
  GenerateConfig& gen = o.g.gen;
  if (o.g.verbose) {
    auto chain = describe_sampler_chain(gen.sampling, model->info().vocab_size, model->info().n_ctx);
    if (chain) fmt::print(stderr, "glass: sampler chain: {}\n", *chain);
  }
  gen.cancel = std::make_shared<std::atomic<bool>>(false);
  g_cancel = gen.cancel.get();
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: Ctrl-C at the prompt interrupts the read
  struct sigaction previous {};
  sigaction(SIGINT, &action, &previous);

  const bool color = use_color(o.color);
  Conversation conversation;
  auto restart = [&] {
    conversation.clear();
    if (!o.system.empty()) conversation.push_back({"system", o.system, {}});
  };
  restart();
  const bool tty = isatty(fileno(stdin)) != 0;
  int attempted = 0, succeeded = 0;
  std::string line;
  std::string pending = o.first_prompt;
  while (!g_quit.load()) {
    if (pending.empty()) {
      if (o.single_turn && attempted > 0) break;
      if (tty) fmt::print("> {}", color ? "\033[32m" : "");
      std::fflush(stdout);
      const bool got = read_message(std::cin, o.multiline, line);
      if (tty && color) fmt::print("\033[0m");
      if (!got) {
        if (tty) std::fputc('\n', stdout);  // Ctrl-D: leave the shell prompt on a line of its own
        break;
      }
    } else {
      line = std::move(pending);
      pending.clear();
    }
    if (line.empty()) continue;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/help") {
      fmt::print("{}", kHelp);
      continue;
    }
    if (line == "/clear") {
      restart();
      info("conversation cleared");
      continue;
    }
    if (line.starts_with("/save ") || line.starts_with("/load ")) {
      const std::string path = line.substr(6);
      if (line[1] == 's') {
        if (Status st = save_conversation(conversation, path); !st)
          report(st.error());
        else
          info("saved {} messages to {}", conversation.size(), path);
      } else {
        auto loaded = load_conversation(path);
        if (!loaded) {
          report(loaded.error());
        } else {
          conversation = std::move(*loaded);
          info("loaded {} messages from {}", conversation.size(), path);
        }
      }
      continue;
    }
    if (line[0] == '/' && line.find(' ') == std::string::npos) {
      fmt::print(stderr, "glass: unknown command {} (/help lists them)\n", line);
      continue;
    }
    ++attempted;
    conversation.push_back({"user", line, {}});
    if (Status st = fit_context(*model, conversation, o); !st) {
      conversation.pop_back();
      report(st.error());
      continue;
    }
    gen.cancel->store(false);
    g_generating.store(true);
    auto r = (*session)->chat(conversation, gen, [](std::string_view piece) {
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
    ++succeeded;
    conversation.push_back({"assistant", r->text, {}});
    if (o.g.verbose || r->finish == FinishReason::Cancelled)
      fmt::print(stderr, "[{} new prompt tokens, {} generated, {:.1f} tok/s, {} cached, finish: {}{}]\n",
                 r->timings.n_prompt_tokens, r->timings.n_decoded,
                 r->timings.decode_ms > 0
                     ? 1000.0 * static_cast<double>(r->timings.n_decoded) / r->timings.decode_ms
                     : 0.0,
                 (*session)->n_past(), finish_reason_name(r->finish),
                 o.g.verbose ? fmt::format(", seed {}", r->seed) : "");
  }
  if (g_quit.load() && tty) std::fputc('\n', stdout);  // Ctrl-C at the prompt
  std::fflush(stdout);
  sigaction(SIGINT, &previous, nullptr);
  g_cancel = nullptr;
  // A chat in which every turn failed is a failure to the shell (scripts piping into it).
  return attempted > 0 && succeeded == 0 ? 1 : 0;
}

void add_chat_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<ChatOptions>();
  o->g.gen.max_tokens = 512;
  CLI::App* cmd = app.add_subcommand("chat", "interactive multi-turn chat (Ctrl-C cancels a reply; /help)");
  add_model_options(*cmd, o->model);
  add_chat_template_option(*cmd, o->model);
  add_generation_options(*cmd, o->g);
  cmd->add_option("-n,--n-predict", o->g.gen.max_tokens, "most tokens per reply")
      ->check(CLI::Range(0, 1 << 24))
      ->capture_default_str();
  add_chat_flags(*cmd, *o);
  cmd->add_option("-p,--prompt", o->first_prompt,
                  "the first user message, answered before any input is read");
  cmd->add_option_function<std::string>(
      "-f,--file",
      [o](const std::string& path) {
        auto text = read_text_file(path);
        if (!text) throw CLI::ValidationError("--file", text.error().message);
        o->first_prompt = std::move(*text);
      },
      "read the first user message from FILE");
  // -i / --interactive-first / -cnv: already a chat; accepted so llama-cli habits work here too.
  cmd->add_flag_callback(
      "-i,--interactive,--interactive-first,--conversation", [] {}, "conversation mode (the default here)");
  cmd->callback([o, &exit_code] { exit_code = run_chat(*o); });
}

}  // namespace glass::cli
