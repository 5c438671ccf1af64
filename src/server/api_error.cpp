#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace glass::server {

ApiError bad_field(const std::string& param, const std::string& what) {
  return ApiError{.status = 400, .message = param + ": " + what, .param = param};
}

std::string error_body(const ApiError& e) {
  nlohmann::json err = {
      {"message", e.message},
      {"type", e.type},
      {"param", e.param.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.param)},
      {"code", e.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.code)},
  };
  // Messages may quote request bytes that are not UTF-8: replaced, never a throw.
  return nlohmann::json{{"error", std::move(err)}}.dump(-1, ' ', false,
                                                        nlohmann::json::error_handler_t::replace);
}

}  // namespace glass::server
