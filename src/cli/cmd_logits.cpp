// glass logits: the logits after every position of a token sequence, as a float32 .npy of shape
// [n_tokens, n_vocab]. Modes: prefill (one call), decode (first token, then one token per call
// through the KV cache), chunked:N (N tokens per call).
#include <fmt/format.h>

#include <charconv>
#include <vector>

#include "cli/common.h"
#include "formats/npy.h"

namespace glass::cli {
namespace {

struct LogitsOptions {
  ModelOptions model;
  std::string tokens;
  std::string mode = "prefill";
  std::string output;
};

Result<std::vector<int32_t>> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  const char* p = text.data();
  const char* end = p + text.size();
  while (p < end) {
    while (p < end && (*p == ',' || *p == ' ' || *p == '[' || *p == ']')) ++p;
    if (p == end) break;
    int32_t v = 0;
    auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || next == p)
      return make_error(ErrorCode::InvalidArgument,
                        fmt::format("logits: cannot read a token id at '{}'", std::string(p, end)));
    ids.push_back(v);
    p = next;
  }
  if (ids.empty()) return make_error(ErrorCode::InvalidArgument, "logits: --tokens is empty");
  return ids;
}

Result<int64_t> chunk_size(const std::string& mode, int64_t n) {
  if (mode == "prefill") return n;
  if (mode == "decode") return 1;
  if (mode.starts_with("chunked:")) {
    int64_t c = 0;
    const std::string num = mode.substr(8);
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), c);
    if (ec == std::errc() && p == num.data() + num.size() && c > 0) return c;
  }
  return make_error(ErrorCode::InvalidArgument,
                    fmt::format("logits: unknown mode '{}' (prefill, decode or chunked:N with N > 0)", mode));
}

int logits(LogitsOptions o) {
  auto ids = parse_ids(o.tokens);
  if (!ids) return report(ids.error());
  auto chunk = chunk_size(o.mode, static_cast<int64_t>(ids->size()));
  if (!chunk) return report(chunk.error());
  // Without -c/-b: room for the whole sequence, and one prefill call per chunk.
  o.model.load.min_ctx = static_cast<int64_t>(ids->size());
  if (o.model.load.n_batch == 0) o.model.load.n_batch = *chunk;
  auto model = load_or_report(o.model);
  if (!model) return 1;
  auto session = model->new_session();
  if (!session) return report(session.error());
  const auto n = static_cast<int64_t>(ids->size());
  const int64_t vocab = model->info().vocab_size;
  std::vector<float> out(static_cast<size_t>(n * vocab));
  // decode mode: the first token goes through prefill, the rest one at a time.
  for (int64_t done = 0; done < n;) {
    const int64_t c = std::min(n - done, (o.mode == "decode" && done == 0) ? int64_t{1} : *chunk);
    auto st = (*session)->eval(std::span<const int32_t>(ids->data() + done, static_cast<size_t>(c)),
                               std::span<float>(out.data() + done * vocab, static_cast<size_t>(c * vocab)));
    if (!st) return report(st.error());
    done += c;
  }
  if (auto st = formats::write_npy_f32(o.output, out.data(), {n, vocab}); !st) return report(st.error());
  fmt::print(stderr, "glass: wrote {} [{}, {}] ({} mode, {} eval calls, plans compiled: {})\n", o.output, n,
             vocab, o.mode, (*session)->stats().n_eval_calls, model->plans_compiled());
  return 0;
}

}  // namespace

void add_logits_command(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* cmd = app.add_subcommand("logits", "write the logits after every position to a .npy file");
  add_model_options(*cmd, o->model);
  cmd->add_option("--tokens", o->tokens, "comma-separated token ids, used exactly as given")->required();
  cmd->add_option("--mode", o->mode, "prefill | decode | chunked:N")->capture_default_str();
  cmd->add_option("-o,--output", o->output, "output .npy path")->required();
  cmd->callback([o, &exit_code] { exit_code = logits(*o); });
}

}  // namespace glass::cli
