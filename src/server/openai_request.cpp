#include "server/openai_request.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "server/json_bound.h"

namespace glass::server {
namespace {

// Ordered: tools and tool-call arguments reach the template in the order the client wrote them
// (templates print them with tojson, as Python dicts keep insertion order).
using Json = nlohmann::ordered_json;
using Err = std::optional<ApiError>;

// Longer lists only cost time in the stop matcher on every token; OpenAI allows 4.
constexpr size_t kMaxStopStrings = 16;
// Each tool is rendered into every prompt; more than this is a client bug, not a toolbox.
constexpr size_t kMaxTools = 128;

// Nesting is checked per field once parsed, so that the error names the field.
Err parse_object(std::string_view body, Json& out) {
  auto parsed = parse_json_bounded<Json>(body, "the body", {.memory_factor = 16, .max_depth = 0});
  if (!parsed) return ApiError{.message = parsed.error().message};
  out = std::move(*parsed);
  if (!out.is_object()) return ApiError{.message = "the body must be a JSON object"};
  return std::nullopt;
}

// A field that is absent or null: clients send null for "not set" (the openai SDKs do).
const Json* field(const Json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

std::string type_name(const Json& v) { return v.type_name(); }

// A value for an error message: scalars as written (cut short), containers by their type. Never a
// dump of a container, which recurses as deep as the client nested it.
std::string describe(const Json& v) {
  if (v.is_structured()) return type_name(v);
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// Integers, and floats holding an integer (5.0, as some clients' number types send it).
Err to_int(const Json& v, const std::string& name, int64_t lo, int64_t hi, int64_t& out) {
  bool ok = false;
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    ok = u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    out = static_cast<int64_t>(u);
    if (!ok) return bad_field(name, fmt::format("must be at most {}, got {}", hi, u));
  } else if (v.is_number_integer()) {
    out = v.get<int64_t>();
    ok = true;
  } else if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9.0e18) {
      out = static_cast<int64_t>(d);
      ok = true;
    }
  }
  if (!ok) return bad_field(name, fmt::format("must be an integer, got {}", describe(v)));
  if (out < lo || out > hi) return bad_field(name, fmt::format("must be in [{}, {}], got {}", lo, hi, out));
  return std::nullopt;
}

Err read_int(const Json& obj, const char* name, int64_t lo, int64_t hi, std::optional<int64_t>& out) {
  const Json* v = field(obj, name);
  if (!v) return std::nullopt;
  int64_t x = 0;
  if (auto e = to_int(*v, name, lo, hi, x)) return e;
  out = x;
  return std::nullopt;
}

// A number in [lo, hi], or (lo, hi] when lo_open.
Err read_number(const Json& obj, const char* name, double lo, double hi, bool lo_open, float& out) {
  const Json* v = field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) return bad_field(name, fmt::format("must be a number, got {}", type_name(*v)));
  const double d = v->get<double>();
  if (!std::isfinite(d) || d > hi || (lo_open ? d <= lo : d < lo))
    return bad_field(name, fmt::format("must be in {}{}, {}], got {}", lo_open ? "(" : "[", lo, hi, d));
  out = static_cast<float>(d);
  return std::nullopt;
}

Err read_bool(const Json& obj, const char* name, const std::string& param, bool& out) {
  const Json* v = field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return bad_field(param, fmt::format("must be true or false, got {}", describe(*v)));
  out = v->get<bool>();
  return std::nullopt;
}

Err read_string(const Json& obj, const char* name, std::optional<std::string>& out) {
  const Json* v = field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) return bad_field(name, fmt::format("must be a string, got {}", type_name(*v)));
  out = v->get<std::string>();
  return std::nullopt;
}

Err read_stop(const Json& obj, std::vector<std::string>& out) {
  const Json* v = field(obj, "stop");
  if (!v) return std::nullopt;
  std::vector<const Json*> items;
  if (v->is_string()) {
    items.push_back(v);
  } else if (v->is_array()) {
    for (const Json& s : *v) items.push_back(&s);
  } else {
    return bad_field("stop", fmt::format("must be a string or an array of strings, got {}", type_name(*v)));
  }
  if (items.size() > kMaxStopStrings)
    return bad_field("stop", fmt::format("at most {} stop strings, got {}", kMaxStopStrings, items.size()));
  for (const Json* s : items) {
    if (!s->is_string()) return bad_field("stop", fmt::format("must hold strings, got {}", type_name(*s)));
    // An empty stop string would match before the first token: generation could never start.
    if (s->get_ref<const std::string&>().empty()) return bad_field("stop", "must not hold an empty string");
    out.push_back(s->get<std::string>());
  }
  return std::nullopt;
}

Err read_logit_bias(const Json& obj, const ModelLimits& limits, std::vector<std::pair<int32_t, float>>& out) {
  const Json* v = field(obj, "logit_bias");
  if (!v) return std::nullopt;
  if (!v->is_object())
    return bad_field("logit_bias",
                     fmt::format("must be an object mapping token ids to biases, got {}", type_name(*v)));
  for (const auto& [key, bias] : v->items()) {
    int64_t id = -1;
    const char* end = key.data() + key.size();
    auto [p, ec] = std::from_chars(key.data(), end, id);
    if (ec != std::errc() || p != end || id < 0 || id >= limits.vocab_size)
      return bad_field("logit_bias",
                       fmt::format("key '{}' is not a token id in [0, {})", key, limits.vocab_size));
    if (!bias.is_number() || !std::isfinite(bias.get<double>()) || std::fabs(bias.get<double>()) > 100.0)
      return bad_field(
          "logit_bias",
          fmt::format("the bias of token {} must be a number in [-100, 100], got {}", id, describe(bias)));
    out.emplace_back(static_cast<int32_t>(id), bias.get<float>());
  }
  return std::nullopt;
}

// A field glass does not serve yet: accepted only with a value that asks for nothing.
Err refuse_unless(const Json& obj, const char* name, bool (*harmless)(const Json&), const char* what) {
  const Json* v = field(obj, name);
  if (!v || harmless(*v)) return std::nullopt;
  return bad_field(name, what);
}

bool is_false(const Json& v) { return v.is_boolean() && !v.get<bool>(); }
bool is_one(const Json& v) { return v.is_number() && v.get<double>() == 1.0; }
bool is_empty_text(const Json& v) { return v.is_string() && v.get_ref<const std::string&>().empty(); }
bool is_empty_array(const Json& v) { return v.is_array() && v.empty(); }

Err refuse_unsupported(const Json& obj) {
  if (auto e = refuse_unless(obj, "echo", is_false, "echoing the prompt is not supported yet")) return e;
  if (auto e = refuse_unless(obj, "best_of", is_one, "only 1 is supported")) return e;
  if (auto e = refuse_unless(obj, "suffix", is_empty_text, "suffixes (insertion) are not supported"))
    return e;
  if (auto e = refuse_unless(obj, "functions", is_empty_array, "function calls are not supported yet"))
    return e;
  return std::nullopt;
}

// Chat: `logprobs` true or false, and `top_logprobs` [0, 20], which needs logprobs true (as OpenAI
// and vLLM answer). Completions: the legacy `logprobs`, an integer [0, 5] (OpenAI's limit): each
// token's log-probability and its N most likely alternatives; false reads as absent.
Err read_logprobs(const Json& obj, bool chat, GenerateConfig& c) {
  std::optional<int64_t> top;
  if (chat) {
    if (auto e = read_bool(obj, "logprobs", "logprobs", c.logprobs)) return e;
    if (auto e = read_int(obj, "top_logprobs", 0, kMaxTopLogprobs, top)) return e;
    if (top && !c.logprobs) return bad_field("top_logprobs", "needs \"logprobs\": true");
    c.top_logprobs = static_cast<int32_t>(top.value_or(0));
    return std::nullopt;
  }
  if (field(obj, "top_logprobs"))
    return bad_field(
        "top_logprobs",
        fmt::format("is a chat completions field; /v1/completions takes \"logprobs\": N (0 to {})",
                    kMaxCompletionLogprobs));
  if (const Json* v = field(obj, "logprobs"); v && is_false(*v)) return std::nullopt;
  if (auto e = read_int(obj, "logprobs", 0, kMaxCompletionLogprobs, top)) return e;
  c.logprobs = top.has_value();
  c.top_logprobs = static_cast<int32_t>(top.value_or(0));
  return std::nullopt;
}

Err parse_fields(const Json& obj, const ModelLimits& limits, bool chat, GenerationFields& out) {
  if (auto e = read_string(obj, "model", out.model)) return e;
  if (const Json* n = field(obj, "n")) {
    int64_t count = 0;
    if (auto e = to_int(*n, "n", 1, kMaxChoices, count)) return e;
    out.n = static_cast<int32_t>(count);
  }
  if (auto e = refuse_unsupported(obj)) return e;

  GenerateConfig& c = out.config;
  SamplingConfig& s = c.sampling;
  // A fresh seed per request unless one is given, as OpenAI does (glass's fixed default would make
  // every sampled reply to the same prompt the same).
  s.seed = SamplingConfig::kRandomSeed;
  if (auto e = read_number(obj, "temperature", 0.0, 2.0, false, s.temperature)) return e;
  if (auto e = read_number(obj, "top_p", 0.0, 1.0, true, s.top_p)) return e;
  if (auto e = read_number(obj, "min_p", 0.0, 1.0, false, s.min_p)) return e;
  if (auto e = read_number(obj, "presence_penalty", -2.0, 2.0, false, s.presence_penalty)) return e;
  if (auto e = read_number(obj, "frequency_penalty", -2.0, 2.0, false, s.frequency_penalty)) return e;
  std::optional<int64_t> top_k, seed, max_tokens, max_completion_tokens;
  // -1 is how vLLM-style clients say "off"; glass's top_k is off at <= 0.
  if (auto e = read_int(obj, "top_k", -1, std::numeric_limits<int32_t>::max(), top_k)) return e;
  if (top_k) s.top_k = static_cast<int32_t>(*top_k);
  if (auto e = read_int(obj, "seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                        seed))
    return e;
  // A negative seed asks for a random one, as llama.cpp's -1.
  if (seed) s.seed = *seed < 0 ? SamplingConfig::kRandomSeed : static_cast<uint64_t>(*seed);
  if (auto e = read_logit_bias(obj, limits, s.logit_bias)) return e;
  if (auto e = read_stop(obj, c.stop)) return e;
  if (auto e = read_logprobs(obj, chat, c)) return e;
  if (auto e = read_response_constraint(obj, c.constraint)) return e;

  constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
  if (auto e = read_int(obj, "max_tokens", 0, kIntMax, max_tokens)) return e;
  if (chat) {
    if (auto e = read_int(obj, "max_completion_tokens", 0, kIntMax, max_completion_tokens)) return e;
    if (max_completion_tokens) max_tokens = max_completion_tokens;
  }
  // Absent: until the context is full or a stop. Larger values change nothing (a sequence cannot
  // pass n_ctx) and are clamped, since the engine reserves room for max_tokens ids up front.
  c.max_tokens = static_cast<int32_t>(std::min<int64_t>(max_tokens.value_or(limits.n_ctx), limits.n_ctx));

  if (auto e = read_bool(obj, "stream", "stream", out.stream)) return e;
  if (const Json* so = field(obj, "stream_options")) {
    if (!so->is_object())
      return bad_field("stream_options", fmt::format("must be an object, got {}", type_name(*so)));
    if (auto e = read_bool(*so, "include_usage", "stream_options.include_usage", out.include_usage)) return e;
  }
  return std::nullopt;
}

Err read_ids(const Json& arr, const std::string& name, const ModelLimits& limits, std::vector<int32_t>& out) {
  out.reserve(arr.size());
  for (size_t i = 0; i < arr.size(); ++i) {
    int64_t id = 0;
    if (auto e = to_int(arr[i], name, 0, limits.vocab_size - 1, id)) {
      e->message = fmt::format("{}[{}]: must be a token id in [0, {}), got {}", name, i, limits.vocab_size,
                               describe(arr[i]));
      return e;
    }
    out.push_back(static_cast<int32_t>(id));
  }
  return std::nullopt;
}

bool all_integers(const Json& arr) {
  for (const Json& x : arr)
    if (!x.is_number()) return false;
  return true;
}

// string | [string] | [int, ...] | [[int, ...]]: one prompt only (several would need n > 1 choices).
Err read_prompt(const Json& obj, const ModelLimits& limits, CompletionRequest& out) {
  const Json* v = field(obj, "prompt");
  if (!v) return bad_field("prompt", "is required");
  if (v->is_string()) {
    out.prompt_text = v->get<std::string>();
    return std::nullopt;
  }
  if (!v->is_array())
    return bad_field("prompt",
                     fmt::format("must be a string or an array of token ids, got {}", type_name(*v)));
  if (v->empty()) return bad_field("prompt", "must not be empty");
  if (all_integers(*v)) return read_ids(*v, "prompt", limits, out.prompt_ids);
  if (v->size() > 1) return bad_field("prompt", "only one prompt per request is supported");
  const Json& only = (*v)[0];
  if (only.is_string()) {
    out.prompt_text = only.get<std::string>();
    return std::nullopt;
  }
  if (only.is_array() && !only.empty() && all_integers(only))
    return read_ids(only, "prompt", limits, out.prompt_ids);
  return bad_field("prompt", "must be a string or an array of token ids");
}

Err read_content(const Json& msg, const std::string& where, std::string& out) {
  const Json* v = field(msg, "content");
  if (!v) return std::nullopt;  // null content: an assistant turn that only called tools
  if (v->is_string()) {
    out = v->get<std::string>();
    return std::nullopt;
  }
  if (!v->is_array())
    return bad_field(where + ".content",
                     fmt::format("must be a string or an array of content parts, got {}", type_name(*v)));
  for (size_t j = 0; j < v->size(); ++j) {
    const Json& part = (*v)[j];
    const std::string at = fmt::format("{}.content[{}]", where, j);
    if (!part.is_object()) return bad_field(at, "must be an object {\"type\": \"text\", \"text\": ...}");
    const Json* type = field(part, "type");
    if (!type || !type->is_string() || type->get<std::string>() != "text")
      return bad_field(at + ".type", "only \"text\" content parts are supported");
    const Json* text = field(part, "text");
    if (!text || !text->is_string()) return bad_field(at + ".text", "must be a string");
    out += text->get<std::string>();  // parts in order, as one text: templates take a string
  }
  return std::nullopt;
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Err read_optional_string(const Json& obj, const char* name, const std::string& where, Json& extra) {
  const Json* v = field(obj, name);
  if (!v) return std::nullopt;
  if (!v->is_string())
    return bad_field(fmt::format("{}.{}", where, name),
                     fmt::format("must be a string, got {}", type_name(*v)));
  extra[name] = *v;
  return std::nullopt;
}

// An assistant turn's tool_calls: [{"id", "type": "function", "function": {"name", "arguments"}}],
// arguments a JSON string (OpenAI) or an object. The template gets them as transformers' callers pass
// them: arguments as an object where the string holds JSON, else the string as it is (a model may
// have written broken JSON earlier; the template can still print it).
Err read_tool_calls(const Json& msg, const std::string& where, Json& extra) {
  const Json* v = field(msg, "tool_calls");
  if (!v) return std::nullopt;
  const std::string at = where + ".tool_calls";
  if (!v->is_array()) return bad_field(at, fmt::format("must be an array, got {}", type_name(*v)));
  if (v->empty()) return std::nullopt;
  Json calls = Json::array();
  for (size_t j = 0; j < v->size(); ++j) {
    const Json& c = (*v)[j];
    const std::string cat = fmt::format("{}[{}]", at, j);
    if (!c.is_object()) return bad_field(cat, fmt::format("must be an object, got {}", type_name(c)));
    Json call = Json::object();
    if (const Json* id = field(c, "id")) {
      if (!id->is_string()) return bad_field(cat + ".id", "must be a string");
      call["id"] = *id;
    }
    if (const Json* type = field(c, "type"); type && !(type->is_string() && *type == "function"))
      return bad_field(cat + ".type", "must be \"function\"");
    call["type"] = "function";
    const Json* fn = field(c, "function");
    if (!fn || !fn->is_object())
      return bad_field(cat + ".function", "must be an object {\"name\", \"arguments\"}");
    const Json* name = field(*fn, "name");
    if (!name || !name->is_string() || name->get_ref<const std::string&>().empty())
      return bad_field(cat + ".function.name", "must be a non-empty string");
    Json f = {{"name", *name}};
    const Json* args = field(*fn, "arguments");
    if (!args) {
      f["arguments"] = Json::object();
    } else if (args->is_object()) {
      if (nests_deeper_than(*args, kMaxJsonNesting))  // copied and dumped below: both recurse
        return bad_field(cat + ".function.arguments",
                         fmt::format("nests arrays and objects more than {} deep", kMaxJsonNesting));
      f["arguments"] = *args;
    } else if (args->is_string()) {
      // JSON inside a string escapes the body's nesting bound: nested past it, it stays a string.
      Json parsed = parse_json_or_discarded(args->get_ref<const std::string&>());
      f["arguments"] = parsed.is_discarded() ? *args : std::move(parsed);
    } else {
      return bad_field(cat + ".function.arguments",
                       fmt::format("must be a JSON string or an object, got {}", type_name(*args)));
    }
    call["function"] = std::move(f);
    calls.push_back(std::move(call));
  }
  extra["tool_calls"] = std::move(calls);
  return std::nullopt;
}

// What a tool turn carries besides its content, and an assistant turn's calls.
Err read_tool_fields(const Json& msg, const std::string& role, const std::string& where, Json& extra) {
  if (role == "assistant") return read_tool_calls(msg, where, extra);
  if (field(msg, "tool_calls"))
    return bad_field(where + ".tool_calls", "only assistant messages carry tool calls");
  if (role != "tool") return std::nullopt;
  if (auto e = read_optional_string(msg, "tool_call_id", where, extra)) return e;
  return read_optional_string(msg, "name", where, extra);
}

// tool_choice: "auto", "none", "required" or {"type": "function", "function": {"name": ...}}.
Err read_tool_choice(const Json& obj, ToolChoice& out) {
  if (const Json* p = field(obj, "parallel_tool_calls")) {
    if (!p->is_boolean())
      return bad_field("parallel_tool_calls", fmt::format("must be true or false, got {}", describe(*p)));
    out.parallel = p->get<bool>();
  }
  const Json* choice = field(obj, "tool_choice");
  if (!choice) return std::nullopt;
  if (choice->is_string()) {
    const std::string& c = choice->get_ref<const std::string&>();
    if (c == "auto") return std::nullopt;
    if (c == "none" || c == "required") {
      out.kind = c == "none" ? ToolChoice::Kind::None : ToolChoice::Kind::Required;
      return std::nullopt;
    }
  } else if (choice->is_object()) {
    const Json* type = field(*choice, "type");
    const Json* fn = field(*choice, "function");
    const Json* name = fn && fn->is_object() ? field(*fn, "name") : nullptr;
    if (type && *type == "function" && name && name->is_string() &&
        !name->get_ref<const std::string&>().empty()) {
      out.kind = ToolChoice::Kind::Named;
      out.name = name->get<std::string>();
      return std::nullopt;
    }
  }
  return bad_field("tool_choice",
                   "must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": "
                   "{\"name\": ...}}");
}

// tools: [{"type": "function", "function": {"name", "description", "parameters"}}].
Err read_tools(const Json& obj, std::string& out, ToolChoice& choice) {
  const Json* v = field(obj, "tools");
  if (auto e = read_tool_choice(obj, choice)) return e;
  const bool use = choice.kind != ToolChoice::Kind::None;
  if (!v && (choice.kind == ToolChoice::Kind::Required || choice.kind == ToolChoice::Kind::Named))
    return bad_field("tool_choice", "needs \"tools\"");
  if (!v) return std::nullopt;
  if (!v->is_array())
    return bad_field("tools", fmt::format("must be an array of tools, got {}", type_name(*v)));
  if (v->size() > kMaxTools)
    return bad_field("tools", fmt::format("at most {} tools, got {}", kMaxTools, v->size()));
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& t = (*v)[i];
    const std::string at = fmt::format("tools[{}]", i);
    if (!t.is_object()) return bad_field(at, fmt::format("must be an object, got {}", type_name(t)));
    const Json* type = field(t, "type");
    if (!type || !type->is_string() || *type != "function")
      return bad_field(at + ".type", "must be \"function\"");
    const Json* fn = field(t, "function");
    if (!fn || !fn->is_object())
      return bad_field(at + ".function", "must be an object {\"name\", \"description\", \"parameters\"}");
    const Json* name = field(*fn, "name");
    if (!name || !name->is_string() || name->get_ref<const std::string&>().empty())
      return bad_field(at + ".function.name", "must be a non-empty string");
    if (const Json* d = field(*fn, "description"); d && !d->is_string())
      return bad_field(at + ".function.description", "must be a string");
    if (const Json* p = field(*fn, "parameters"); p && !p->is_object())
      return bad_field(at + ".function.parameters", "must be a JSON schema object");
  }
  if (nests_deeper_than(*v, kMaxJsonNesting))  // dumped into the prompt: the dump recurses
    return bad_field("tools", fmt::format("nests arrays and objects more than {} deep", kMaxJsonNesting));
  if (use && !v->empty()) out = dump(*v);
  return std::nullopt;
}

Err read_messages(const Json& obj, std::vector<ChatMessage>& out) {
  const Json* v = field(obj, "messages");
  if (!v) return bad_field("messages", "is required");
  if (!v->is_array()) return bad_field("messages", fmt::format("must be an array, got {}", type_name(*v)));
  if (v->empty()) return bad_field("messages", "must hold at least one message");
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& m = (*v)[i];
    const std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object()) return bad_field(where, fmt::format("must be an object, got {}", type_name(m)));
    const Json* role = field(m, "role");
    if (!role || !role->is_string()) return bad_field(where + ".role", "must be a string");
    std::string r = role->get<std::string>();
    // OpenAI's newer name for the system role; templates know only "system".
    if (r == "developer") r = "system";
    if (r != "system" && r != "user" && r != "assistant" && r != "tool")
      return bad_field(where + ".role",
                       fmt::format("must be system, developer, user, assistant or tool, got '{}'", r));
    ChatMessage msg{.role = std::move(r)};
    if (auto e = read_content(m, where, msg.content)) return e;
    Json extra = Json::object();
    if (auto e = read_tool_fields(m, msg.role, where, extra)) return e;
    // An earlier reply's thoughts, sent back: Qwen 3's template reads reasoning_content, gpt-oss's
    // reads thinking; each ignores the other's.
    if (const Json* rc = field(m, "reasoning_content"); rc && !rc->is_null()) {
      if (!rc->is_string()) return bad_field(where + ".reasoning_content", "must be a string");
      if (msg.role != "assistant")
        return bad_field(where + ".reasoning_content", "belongs to assistant messages");
      extra["reasoning_content"] = *rc;
      extra["thinking"] = *rc;
    }
    if (!extra.empty()) msg.extra_json = dump(extra);
    out.push_back(std::move(msg));
  }
  return std::nullopt;
}

// chat_template_kwargs: an object whose members become template variables (llama-server's and vLLM's
// field); the names the server sets itself are refused, as transformers refuses them twice.
Err read_template_kwargs(const Json& obj, std::string& out) {
  const Json* v = field(obj, "chat_template_kwargs");
  if (!v || v->is_null()) return std::nullopt;
  if (!v->is_object())
    return bad_field("chat_template_kwargs", fmt::format("must be an object, got {}", type_name(*v)));
  for (const char* reserved : {"messages", "tools", "add_generation_prompt", "bos_token", "eos_token"})
    if (v->contains(reserved))
      return bad_field(fmt::format("chat_template_kwargs.{}", reserved), "is set by the server");
  if (nests_deeper_than(*v, kMaxJsonNesting))  // copied into the template's context
    return bad_field("chat_template_kwargs",
                     fmt::format("nests arrays and objects more than {} deep", kMaxJsonNesting));
  if (!v->empty()) out = dump(*v);
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_completion_request(std::string_view body, const ModelLimits& limits,
                                                 CompletionRequest& out) {
  Json obj;
  if (auto e = parse_object(body, obj)) return e;
  if (auto e = read_prompt(obj, limits, out)) return e;
  return parse_fields(obj, limits, /*chat=*/false, out.fields);
}

std::optional<ApiError> parse_chat_request(std::string_view body, const ModelLimits& limits,
                                           ChatRequest& out) {
  Json obj;
  if (auto e = parse_object(body, obj)) return e;
  if (auto e = read_messages(obj, out.messages)) return e;
  if (auto e = read_tools(obj, out.tools_json, out.tool_choice)) return e;
  if (auto e = read_template_kwargs(obj, out.template_kwargs_json)) return e;
  if (auto e = read_string(obj, "reasoning_format", out.reasoning_format)) return e;
  if (out.reasoning_format && *out.reasoning_format != "none" && *out.reasoning_format != "auto" &&
      *out.reasoning_format != "deepseek")
    return bad_field("reasoning_format", fmt::format("must be \"none\", \"auto\" or \"deepseek\", got \"{}\"",
                                                     *out.reasoning_format));
  return parse_fields(obj, limits, /*chat=*/true, out.fields);
}

std::optional<ApiError> parse_tokenize_request(std::string_view body, TokenizeRequest& out) {
  Json obj;
  if (auto e = parse_object(body, obj)) return e;
  const Json* content = field(obj, "content");
  if (!content || !content->is_string()) return bad_field("content", "must be a string");
  out.content = content->get<std::string>();
  if (auto e = read_bool(obj, "add_special", "add_special", out.add_special)) return e;
  return read_bool(obj, "parse_special", "parse_special", out.parse_special);
}

std::optional<ApiError> parse_detokenize_request(std::string_view body, const ModelLimits& limits,
                                                 std::vector<int32_t>& out) {
  Json obj;
  if (auto e = parse_object(body, obj)) return e;
  const Json* tokens = field(obj, "tokens");
  if (!tokens || !tokens->is_array()) return bad_field("tokens", "must be an array of token ids");
  return read_ids(*tokens, "tokens", limits, out);
}

}  // namespace glass::server
