#include "server/tool_calls.h"

#include <algorithm>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "server/json_bound.h"

namespace glass::server {
namespace {

using Json = nlohmann::ordered_json;  // arguments keep the key order the model wrote

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kMistral = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kPythonTag = "<|python_tag|>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

// Text nested past the JSON bound is not a call: dumping what parsing built would recurse as deep.
Json parse_json(std::string_view s) { return parse_json_or_discarded(s); }

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

// Arguments as an object, or as a string holding one (some models write them that way, as OpenAI's
// wire format does); absent: a call without arguments.
std::optional<std::string> arguments_of(const Json& args) {
  if (args.is_object()) return dump(args);
  if (args.is_string()) {
    const Json inner = parse_json(args.get_ref<const std::string&>());
    if (!inner.is_discarded() && inner.is_object()) return dump(inner);
  }
  return std::nullopt;
}

// {"name": ..., <args_key>: {...}}
std::optional<ToolCall> call_of(const Json& j, std::initializer_list<const char*> args_keys) {
  if (!j.is_object()) return std::nullopt;
  const auto name = j.find("name");
  if (name == j.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
    return std::nullopt;
  ToolCall call{.name = name->get<std::string>(), .arguments = "{}"};
  for (const char* key : args_keys) {
    const auto a = j.find(key);
    if (a == j.end()) continue;
    auto args = arguments_of(*a);
    if (!args) return std::nullopt;
    call.arguments = std::move(*args);
    break;
  }
  return call;
}

// One call object or an array of them.
bool calls_of(const Json& j, std::initializer_list<const char*> args_keys, std::vector<ToolCall>& out) {
  if (j.is_array()) {
    if (j.empty()) return false;
    for (const Json& x : j) {
      auto c = call_of(x, args_keys);
      if (!c) return false;
      out.push_back(std::move(*c));
    }
    return true;
  }
  auto c = call_of(j, args_keys);
  if (!c) return false;
  out.push_back(std::move(*c));
  return true;
}

std::optional<ParsedReply> parse_hermes(std::string_view text) {
  size_t pos = text.find(kHermesOpen);
  if (pos == std::string_view::npos) return std::nullopt;
  ParsedReply r{.content = std::string(text.substr(0, pos))};
  while (pos < text.size()) {
    if (text.substr(pos, kHermesOpen.size()) != kHermesOpen) return std::nullopt;  // text after a call
    const size_t body = pos + kHermesOpen.size();
    const size_t close = text.find(kHermesClose, body);
    if (close == std::string_view::npos) return std::nullopt;  // cut off inside the call
    const Json j = parse_json(trim(text.substr(body, close - body)));
    if (j.is_discarded()) return std::nullopt;
    auto c = call_of(j, {"arguments", "parameters"});
    if (!c) return std::nullopt;
    r.calls.push_back(std::move(*c));
    pos = close + kHermesClose.size();
    while (pos < text.size() && is_space(text[pos])) ++pos;
  }
  return r;
}

std::optional<ParsedReply> parse_llama3(std::string_view text) {
  std::string_view s = trim(text);
  if (s.substr(0, kPythonTag.size()) == kPythonTag) s = trim(s.substr(kPythonTag.size()));
  if (s.empty() || (s.front() != '{' && s.front() != '[')) return std::nullopt;
  const Json j = parse_json(s);
  if (j.is_discarded()) return std::nullopt;
  ParsedReply r;
  if (!calls_of(j, {"parameters", "arguments"}, r.calls)) return std::nullopt;
  return r;
}

std::optional<ParsedReply> parse_mistral(std::string_view text) {
  size_t pos = text.find(kMistral);
  if (pos == std::string_view::npos) return std::nullopt;
  ParsedReply r{.content = std::string(text.substr(0, pos))};
  std::string_view rest = trim(text.substr(pos + kMistral.size()));
  if (!rest.empty() && rest.front() == '[') {  // Nemo: one JSON array of calls
    const Json j = parse_json(rest);
    if (j.is_discarded() || !j.is_array() || !calls_of(j, {"arguments", "parameters"}, r.calls))
      return std::nullopt;
    return r;
  }
  // Small 3.2: name[ARGS]{...}, each call after its own [TOOL_CALLS].
  while (true) {
    const size_t args = rest.find(kMistralArgs);
    if (args == std::string_view::npos) return std::nullopt;
    const std::string_view name = trim(rest.substr(0, args));
    if (name.empty()) return std::nullopt;
    for (char c : name)
      if (is_space(c) || c == '{' || c == '[') return std::nullopt;
    rest = rest.substr(args + kMistralArgs.size());
    const size_t next = rest.find(kMistral);
    const Json j = parse_json(trim(rest.substr(0, next)));
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    r.calls.push_back(ToolCall{.name = std::string(name), .arguments = dump(j)});
    if (next == std::string_view::npos) return r;
    rest = trim(rest.substr(next + kMistral.size()));
  }
}

constexpr std::string_view kXmlFunction = "<function=";
constexpr std::string_view kXmlParameter = "<parameter=";
constexpr std::string_view kXmlFunctionClose = "</function>";

std::string_view skip_space(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  return s;
}

// The parameters of `function` that its schema types as strings: their values are text as written
// (a string "12345" stays a string); other values are JSON where they parse as JSON.
std::vector<std::string> string_parameters(const Json& tools, std::string_view function) {
  std::vector<std::string> out;
  if (!tools.is_array()) return out;
  for (const Json& t : tools) {
    const Json* fn = t.is_object() && t.contains("function") ? &t["function"] : nullptr;
    if (!fn || !fn->is_object() || !fn->contains("name") || (*fn)["name"] != function) continue;
    const auto params = fn->find("parameters");
    if (params == fn->end() || !params->is_object()) continue;
    const auto props = params->find("properties");
    if (props == params->end() || !props->is_object()) continue;
    for (const auto& [name, schema] : props->items())
      if (schema.is_object() && schema.contains("type") && schema["type"] == "string") out.push_back(name);
  }
  return out;
}

// `name>` up to the closing bracket, on one line; empty when malformed.
std::string_view xml_name(std::string_view& s) {
  const size_t close = s.find('>');
  if (close == std::string_view::npos || close == 0) return {};
  const std::string_view name = s.substr(0, close);
  if (name.find_first_of("\n<") != std::string_view::npos) return {};
  s.remove_prefix(close + 1);
  return name;
}

// Qwen3-Coder / Qwen 3.5: <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...
// </function>\n</tool_call>, one block per call (the models sometimes leave out <tool_call>). A value
// ends at "\n</parameter>\n", so a string holding "</parameter>" elsewhere is read whole.
std::optional<ParsedReply> parse_qwen_xml(std::string_view text, std::string_view tools_json) {
  const size_t first = std::min(text.find(kHermesOpen), text.find(kXmlFunction));
  if (first == std::string_view::npos) return std::nullopt;
  ParsedReply r{.content = std::string(text.substr(0, first))};
  const Json tools = tools_json.empty() ? Json() : parse_json(tools_json);
  std::string_view s = text.substr(first);
  while (!s.empty()) {
    const bool wrapped = s.starts_with(kHermesOpen);
    if (wrapped) s = skip_space(s.substr(kHermesOpen.size()));
    if (!s.starts_with(kXmlFunction)) return std::nullopt;
    s.remove_prefix(kXmlFunction.size());
    const std::string_view name = xml_name(s);
    if (name.empty()) return std::nullopt;
    const std::vector<std::string> strings = string_parameters(tools, name);
    Json args = Json::object();
    for (s = skip_space(s); !s.starts_with(kXmlFunctionClose); s = skip_space(s)) {
      if (!s.starts_with(kXmlParameter)) return std::nullopt;  // cut off, or not this format
      s.remove_prefix(kXmlParameter.size());
      const std::string key(xml_name(s));
      if (key.empty()) return std::nullopt;
      if (s.starts_with("\n")) s.remove_prefix(1);
      size_t end = s.find("\n</parameter>\n");
      size_t close = end == std::string_view::npos ? std::string_view::npos : end + 1;
      if (end == std::string_view::npos) {
        close = s.find("</parameter>");
        if (close == std::string_view::npos) return std::nullopt;
        end = close > 0 && s[close - 1] == '\n' ? close - 1 : close;
      }
      const std::string_view value = s.substr(0, end);
      const bool as_text = std::find(strings.begin(), strings.end(), key) != strings.end();
      Json v = as_text ? Json(Json::value_t::discarded) : parse_json(value);
      args[key] = v.is_discarded() ? Json(std::string(value)) : std::move(v);
      s.remove_prefix(close + std::string_view("</parameter>").size());
    }
    s = skip_space(s.substr(kXmlFunctionClose.size()));
    if (wrapped) {
      if (!s.starts_with(kHermesClose)) return std::nullopt;
      s = skip_space(s.substr(kHermesClose.size()));
    }
    r.calls.push_back(ToolCall{.name = std::string(name), .arguments = dump(args)});
  }
  return r;
}

}  // namespace

size_t partial_marker(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == marker.substr(0, n)) return n;
  return 0;
}

ToolFamily tool_family(std::string_view t) {
  // gpt-oss addresses calls to a recipient inside harmony's message headers.
  if (contains(t, "<|channel|>") && contains(t, " to=")) return ToolFamily::Harmony;
  // Qwen3-Coder and Qwen 3.5 show <function=...><parameter=...> inside their <tool_call> blocks.
  if (contains(t, kXmlFunction) && contains(t, kXmlParameter)) return ToolFamily::QwenXml;
  if (contains(t, kHermesOpen)) return ToolFamily::Hermes;
  if (contains(t, kMistral)) return ToolFamily::Mistral;
  // Llama 3.1 names <|python_tag|>; 3.2 only shows the {"name": ..., "parameters": ...} format.
  if (contains(t, kPythonTag) || (contains(t, "<|start_header_id|>") && contains(t, "\"parameters\"")))
    return ToolFamily::Llama3;
  return ToolFamily::None;
}

std::optional<ParsedReply> parse_tool_calls(ToolFamily family, std::string_view text,
                                            std::string_view tools_json) {
  try {
    switch (family) {
      case ToolFamily::Hermes:
        return parse_hermes(text);
      case ToolFamily::QwenXml:
        return parse_qwen_xml(text, tools_json);
      case ToolFamily::Llama3:
        return parse_llama3(text);
      case ToolFamily::Mistral:
        return parse_mistral(text);
      case ToolFamily::Harmony:
      case ToolFamily::None:
        break;
    }
  } catch (...) {
    // Only allocation can throw here; the reply then stays text.
  }
  return std::nullopt;
}

std::string ToolCallFilter::feed(std::string_view piece) {
  // Harmony's call bodies are held by the reasoning splitter, which reads its messages.
  if (family_ == ToolFamily::None || family_ == ToolFamily::Harmony) return std::string(piece);
  if (holding_) {
    held_ += piece;
    return {};
  }
  held_ += piece;
  std::string out;
  if (family_ == ToolFamily::Llama3) {
    // Calls are the whole reply: decided by its first non-space text.
    if (passed_text_) return std::exchange(held_, {});
    const std::string_view h = held_;
    size_t i = 0;
    while (i < h.size() && is_space(h[i])) ++i;
    if (i == h.size()) return {};
    const std::string_view start = h.substr(i);
    if (start.front() == '{' || start.front() == '[' || start.substr(0, kPythonTag.size()) == kPythonTag) {
      holding_ = true;
      return {};
    }
    if (kPythonTag.substr(0, start.size()) == start) return {};  // may still become the tag
    passed_text_ = true;
    return std::exchange(held_, {});
  }
  const std::string_view marker = family_ == ToolFamily::Mistral ? kMistral : kHermesOpen;
  // Qwen's XML calls may also begin at <function= (the models sometimes leave out <tool_call>).
  const std::string_view second = family_ == ToolFamily::QwenXml ? kXmlFunction : marker;
  const size_t p = std::min(held_.find(marker), held_.find(second));
  if (p != std::string::npos) {
    out = held_.substr(0, p);
    held_.erase(0, p);
    holding_ = true;
    return out;
  }
  const size_t keep = std::max(partial_marker(held_, marker), partial_marker(held_, second));
  out = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return out;
}

}  // namespace glass::server
