#include "server/constraints.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "server/json_bound.h"

namespace glass::server {
namespace {

using Json = nlohmann::ordered_json;  // a schema's properties keep the order the client wrote
using Err = std::optional<ApiError>;

const Json* field(const Json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

// The grammar engine's message already names the keyword and the JSON path inside the schema.
// The compiler's message names its own stage ("grammar: ...", "json schema: ..."); where that is the
// field's name too, it is said once.
ApiError schema_error(const std::string& param, const Error& e) {
  const std::string prefix = param + ": ";
  return bad_field(param, e.message.rfind(prefix, 0) == 0 ? e.message.substr(prefix.size()) : e.message);
}

Err compile_schema(const Json& schema, const std::string& param, std::shared_ptr<const Constraint>& out) {
  if (!schema.is_object() && !schema.is_boolean())
    return bad_field(param, fmt::format("must be a JSON schema (an object), got {}", schema.type_name()));
  if (nests_deeper_than(schema, kMaxJsonNesting))  // the dump below recurses
    return bad_field(param, fmt::format("nests arrays and objects more than {} deep", kMaxJsonNesting));
  auto c = Constraint::from_json_schema(schema.dump());
  if (!c) return schema_error(param, c.error());
  out = std::move(*c);
  return std::nullopt;
}

Err read_response_format(const Json& rf, std::shared_ptr<const Constraint>& out) {
  if (!rf.is_object())
    return bad_field("response_format", fmt::format("must be an object, got {}", rf.type_name()));
  const Json* type = field(rf, "type");
  if (!type || !type->is_string())
    return bad_field("response_format.type", "must be \"text\", \"json_object\" or \"json_schema\"");
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "text") return std::nullopt;
  if (t == "json_object") {
    auto c = Constraint::json_object();
    if (!c) return schema_error("response_format", c.error());
    out = std::move(*c);
    return std::nullopt;
  }
  if (t != "json_schema")
    return bad_field("response_format.type",
                     fmt::format("must be \"text\", \"json_object\" or \"json_schema\", got \"{}\"", t));
  const Json* js = field(rf, "json_schema");
  if (!js || !js->is_object())
    return bad_field("response_format.json_schema", "must be an object {\"name\", \"schema\", \"strict\"}");
  if (const Json* strict = field(*js, "strict"); strict && !strict->is_boolean())
    return bad_field("response_format.json_schema.strict", "must be true or false");
  // strict false allows a best effort; glass is exact either way.
  const Json* schema = field(*js, "schema");
  if (!schema) return bad_field("response_format.json_schema.schema", "is required");
  return compile_schema(*schema, "response_format.json_schema.schema", out);
}

// Where a family's call begins and ends, and what its arguments key is called.
struct CallSyntax {
  const char* open;
  const char* close;
  const char* args_key;
};

Err syntax_of(ToolFamily family, CallSyntax& out) {
  switch (family) {
    case ToolFamily::Hermes:
      out = {"<tool_call>\\n", "\\n</tool_call>", "arguments"};
      return std::nullopt;
    case ToolFamily::Llama3:
      out = {"", "", "parameters"};
      return std::nullopt;
    case ToolFamily::Mistral:
      return bad_field("tool_choice",
                       "the Mistral template's calls begin with [TOOL_CALLS], a control token that a grammar "
                       "over text cannot produce; use \"auto\"");
    case ToolFamily::QwenXml:
      return bad_field("tool_choice",
                       "forcing a call in Qwen's XML call format (<function=...><parameter=...>) is not "
                       "supported yet; use \"auto\"");
    case ToolFamily::Harmony:
      return bad_field(
          "tool_choice",
          "harmony (gpt-oss) frames its calls with control tokens (<|channel|>, <|message|>) that a "
          "grammar over text cannot produce; use \"auto\"");
    case ToolFamily::None:
      break;
  }
  return bad_field(
      "tool_choice",
      "the model's chat template shows no tool-call syntax glass knows (Hermes/Qwen <tool_call>, "
      "Llama 3 JSON), so a call cannot be forced; use \"auto\"");
}

// Points the local references of a tool's parameters ("#", "#/$defs/X", "#/properties/a") at where
// the parameters sit inside the call schema (`base`, a JSON pointer fragment), so that they resolve
// against the tool's own schema as they do alone. Values (enum, const, default, examples) are data.
void rebase_refs(Json& schema, const std::string& base) {
  if (schema.is_array()) {
    for (Json& e : schema) rebase_refs(e, base);
    return;
  }
  if (!schema.is_object()) return;
  for (auto& [k, v] : schema.items()) {
    if (k == "enum" || k == "const" || k == "default" || k == "examples") continue;
    if (k == "$ref" && v.is_string()) {
      const std::string ref = v.get<std::string>();
      if (!ref.empty() && ref[0] == '#') v = base + ref.substr(1);
      continue;
    }
    rebase_refs(v, base);
  }
}

}  // namespace

std::optional<ApiError> read_response_constraint(const Json& obj, std::shared_ptr<const Constraint>& out) {
  const Json* rf = field(obj, "response_format");
  const Json* schema = field(obj, "json_schema");
  const Json* gbnf = field(obj, "grammar");
  if ((rf != nullptr) + (schema != nullptr) + (gbnf != nullptr) > 1) {
    // Not rf->value("type", ""): that throws when the type is not a string.
    const Json* type = rf && rf->is_object() ? field(*rf, "type") : nullptr;
    const bool rf_text = type && type->is_string() && type->get_ref<const std::string&>() == "text";
    if (!rf_text || (schema && gbnf))
      return bad_field(rf ? "response_format" : "json_schema",
                       "give one of response_format, json_schema and grammar");
  }
  if (rf)
    if (auto e = read_response_format(*rf, out)) return e;
  if (schema) return compile_schema(*schema, "json_schema", out);
  if (gbnf) {
    if (!gbnf->is_string())
      return bad_field("grammar", fmt::format("must be a GBNF string, got {}", gbnf->type_name()));
    auto c = Constraint::from_gbnf(gbnf->get_ref<const std::string&>());
    if (!c) return schema_error("grammar", c.error());
    out = std::move(*c);
  }
  return std::nullopt;
}

std::optional<ApiError> tool_call_constraint(ToolFamily family, const std::string& tools_json,
                                             const ToolChoice& choice,
                                             std::shared_ptr<const Constraint>& out) {
  if (choice.kind != ToolChoice::Kind::Required && choice.kind != ToolChoice::Kind::Named)
    return std::nullopt;
  CallSyntax syntax{};
  if (auto e = syntax_of(family, syntax)) return e;
  const Json tools = parse_json_or_discarded(tools_json);
  if (!tools.is_array() || tools.empty()) return bad_field("tool_choice", "needs a non-empty \"tools\"");
  // One schema per call the reply may make: {"name": <the name>, <args_key>: <its parameters>}.
  Json calls = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& fn = tools[i]["function"];
    const std::string name = fn["name"].get<std::string>();
    if (choice.kind == ToolChoice::Kind::Named && name != choice.name) continue;
    Json params = fn.contains("parameters") && !fn["parameters"].is_null() ? fn["parameters"]
                                                                           : Json{{"type", "object"}};
    // Compiled alone first, so an unrepresentable schema is reported against its tool.
    std::shared_ptr<const Constraint> alone;
    if (auto e = compile_schema(params, fmt::format("tools[{}].function.parameters", i), alone)) return e;
    rebase_refs(params, choice.kind == ToolChoice::Kind::Named || tools.size() == 1
                            ? fmt::format("#/properties/{}", syntax.args_key)
                            : fmt::format("#/anyOf/{}/properties/{}", calls.size(), syntax.args_key));
    calls.push_back({{"type", "object"},
                     {"properties", {{"name", {{"const", name}}}, {syntax.args_key, std::move(params)}}},
                     {"required", {"name", syntax.args_key}},
                     {"additionalProperties", false}});
  }
  if (calls.empty())
    return bad_field("tool_choice.function.name",
                     fmt::format("names no tool in \"tools\": \"{}\"", choice.name));
  const Json schema = calls.size() == 1 ? calls[0] : Json{{"anyOf", std::move(calls)}};
  auto call = Constraint::from_json_schema(schema.dump());
  if (!call) return schema_error("tools", call.error());
  // The call schema's grammar starts at `root`; the reply's wraps it in the family's markers.
  std::string one = "root";
  if (*syntax.open) one = fmt::format("\"{}\" {}", syntax.open, one);
  if (*syntax.close) one = fmt::format("{} \"{}\"", one, syntax.close);
  const std::string separator = family == ToolFamily::Hermes ? "\"\\n\"" : "";
  std::string start = "tool-reply ::= " + one;
  if (choice.parallel && family == ToolFamily::Hermes) start += fmt::format(" ({} {})*", separator, one);
  auto c = Constraint::from_gbnf(start + "\n" + (*call)->gbnf(), "tool-reply");
  if (!c) return schema_error("tools", c.error());
  out = std::move(*c);
  return std::nullopt;
}

}  // namespace glass::server
