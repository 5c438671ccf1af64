// The conversation context format shared by the fixtures and `glass chat-template --context`, and
// the fixed-clock parser for --now.
#include <fmt/format.h>

#include <cstdio>

#include "tokenizer/chat/chat_template.h"

namespace glass::tokenizer::chat {

Result<nlohmann::ordered_json> variables_from_context(const nlohmann::ordered_json& context,
                                                      const nlohmann::ordered_json& defaults) {
  auto bad = [](const std::string& m) {
    return make_error(ErrorCode::InvalidArgument, "chat context: " + m);
  };
  if (!context.is_object()) return bad(fmt::format("expected a JSON object, got {}", context.type_name()));
  if (!defaults.is_null() && !defaults.is_object()) return bad("default variables must be a JSON object");
  const auto messages = context.find("messages");
  if (messages == context.end() || !messages->is_array()) return bad("'messages' must be a list");
  nlohmann::ordered_json vars = nlohmann::ordered_json::object();
  vars["messages"] = *messages;
  const auto tools = context.find("tools");
  vars["tools"] = tools == context.end() ? nlohmann::ordered_json() : *tools;
  vars["documents"] = nullptr;
  const auto gen = context.find("add_generation_prompt");
  if (gen != context.end() && !gen->is_boolean()) return bad("'add_generation_prompt' must be true or false");
  vars["add_generation_prompt"] = gen == context.end() ? false : gen->get<bool>();
  if (defaults.is_object()) {
    for (const auto& [k, v] : defaults.items()) vars[k] = v;
  }
  const auto extra = context.find("extra");
  if (extra != context.end() && !extra->is_null()) {
    if (!extra->is_object()) return bad("'extra' must be an object");
    for (const auto& [k, v] : extra->items()) vars[k] = v;
  }
  return vars;
}

Result<std::tm> parse_datetime(std::string_view text) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  char sep = 'T';
  const std::string t(text);
  int n = 0;
  const int got = std::sscanf(t.c_str(), "%4d-%2d-%2d%c%2d:%2d:%2d%n", &y, &mo, &d, &sep, &h, &mi, &s, &n);
  bool ok = false;
  if (got == 7 && (sep == 'T' || sep == ' ') && static_cast<size_t>(n) == t.size()) {
    ok = true;
  } else {
    n = 0;
    h = mi = s = 0;
    ok = std::sscanf(t.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && static_cast<size_t>(n) == t.size();
  }
  if (!ok || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60 || h < 0 || mi < 0 ||
      s < 0) {
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("chat template: time '{}' is not of the form 2026-01-01T00:00:00", text));
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = s;
  tm.tm_isdst = 0;
  // Fill in the weekday and day of the year (%a, %A, %j) without touching the time zone.
  std::tm copy = tm;
  const std::time_t t0 = timegm(&copy);
  std::tm norm{};
  gmtime_r(&t0, &norm);
  if (norm.tm_mday != d || norm.tm_mon != mo - 1) {
    return make_error(ErrorCode::InvalidArgument,
                      fmt::format("chat template: '{}' is not a real date", text));
  }
  return norm;
}

}  // namespace glass::tokenizer::chat
