#pragma once
// The request fields that constrain what a reply may be, compiled to a glass::Constraint:
//   response_format  {"type": "text" | "json_object" | "json_schema", "json_schema": {"name", "schema",
//                    "strict"}} (OpenAI); also llama-server's top-level "json_schema" (a schema) and
//                    "grammar" (GBNF), at most one of the three.
//   tool_choice      "required" or {"type": "function", "function": {"name"}}: the reply is one or more
//                    calls (one when parallel_tool_calls is false) in the syntax of the template's
//                    tool family, each call's arguments matching its function's parameters.
// A schema or grammar that cannot be represented exactly is a 400 naming the field and the keyword,
// never an unconstrained reply.
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "glass/grammar.h"
#include "server/api_error.h"
#include "server/tool_calls.h"

namespace glass::server {

// What `tool_choice` asked for: the template decides ("auto"), nothing ("none": tools not shown), a
// call to any of the tools ("required"), or a call to one of them by name.
struct ToolChoice {
  enum class Kind { Auto, None, Required, Named } kind = Kind::Auto;
  std::string name;      // Named
  bool parallel = true;  // parallel_tool_calls
};

// Sets `out` to the constraint the request object's fields ask for, or leaves it null when they ask
// for none.
std::optional<ApiError> read_response_constraint(const nlohmann::ordered_json& request,
                                                 std::shared_ptr<const Constraint>& out);

// The grammar of a reply that calls the tools in `tools_json` (the request's `tools`, validated) as
// `choice` asks, in `family`'s syntax. Errors: a family glass cannot force (none known, or Mistral,
// whose [TOOL_CALLS] marker is a control token no grammar over text can emit), a name that is not a
// tool, parameters that are not a representable JSON schema (naming tools[i].function.parameters).
std::optional<ApiError> tool_call_constraint(ToolFamily family, const std::string& tools_json,
                                             const ToolChoice& choice,
                                             std::shared_ptr<const Constraint>& out);

}  // namespace glass::server
