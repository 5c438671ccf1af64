#pragma once
// The OpenAI error object every failed request is answered with:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "top_p", "code": null}}
// Clients (the openai SDKs among them) read `param` to tell the user which field was wrong, so every
// validation error names its field there.
#include <string>

namespace glass::server {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending field; empty: null
  std::string code;   // OpenAI's machine-readable code ("model_not_found"); empty: null
};

// A 400 naming `param`; the message starts with the field so a log line alone says what was wrong.
ApiError bad_field(const std::string& param, const std::string& what);

// The response body: {"error": {...}}.
std::string error_body(const ApiError& e);

}  // namespace glass::server
