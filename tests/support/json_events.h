#pragma once
// The events of a JSON parse written out as one string per event, from glass's parser
// (core/json_sax.h) and from nlohmann's SAX parse, so the two can be compared: the oracle for the
// differential test and fuzz harness. Header-only (the fuzz build has no test support library).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/json_sax.h"

namespace glass::testing {

struct JsonEvents {
  std::vector<std::string> events;

  bool null() { return add("null"); }
  bool boolean(bool v) { return add(v ? "true" : "false"); }
  bool number_integer(int64_t v) { return add("i" + std::to_string(v)); }
  bool number_unsigned(uint64_t v) { return add("u" + std::to_string(v)); }
  bool number_float(double v) {
    // A value below a double's normal range may be read as zero or as the subnormal nearest it
    // (strtod and from_chars differ there); it is written as zero.
    if (std::fpclassify(v) == FP_SUBNORMAL) v = std::signbit(v) ? -0.0 : 0.0;
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return add("f" + std::to_string(bits));
  }
  bool string(std::string& s) { return add("s" + s); }
  bool key(std::string& s) { return add("k" + s); }
  bool start_object() { return add("{"); }
  bool end_object() { return add("}"); }
  bool start_array() { return add("["); }
  bool end_array() { return add("]"); }

 private:
  bool add(std::string e) {
    events.push_back(std::move(e));
    return true;
  }
};

// nlohmann's SAX interface over the same recorder.
struct NlohmannJsonEvents {
  using Json = nlohmann::json;
  JsonEvents out;

  bool null() { return out.null(); }
  bool boolean(bool v) { return out.boolean(v); }
  bool number_integer(Json::number_integer_t v) { return out.number_integer(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return out.number_unsigned(v); }
  bool number_float(Json::number_float_t v, const std::string&) { return out.number_float(v); }
  bool string(std::string& s) { return out.string(s); }
  bool binary(Json::binary_t&) { return false; }
  bool start_object(size_t) { return out.start_object(); }
  bool end_object() { return out.end_object(); }
  bool start_array(size_t) { return out.start_array(); }
  bool end_array() { return out.end_array(); }
  bool key(std::string& s) { return out.key(s); }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }
};

// Each parser's events, or nullopt where it refused the text.
inline std::optional<std::vector<std::string>> glass_json_events(std::string_view text) {
  JsonEvents e;
  if (!parse_json_sax(text, e).parsed()) return std::nullopt;
  return std::move(e.events);
}
inline std::optional<std::vector<std::string>> nlohmann_json_events(std::string_view text) {
  NlohmannJsonEvents e;
  if (!nlohmann::json::sax_parse(text, &e, nlohmann::json::input_format_t::json, /*strict=*/true))
    return std::nullopt;
  return std::move(e.out.events);
}

}  // namespace glass::testing
