#pragma once
// The JSON Schema converter's class, shared by its files: json_schema.cpp (the tables of primitive
// rules, the visit of one schema node, anyOf / oneOf, enum / const), json_schema_refs.cpp ($ref,
// allOf merging, the step budget, canonical values),
// json_schema_strings.cpp (strings), json_schema_numbers.cpp (integers and numbers),
// json_schema_objects.cpp (objects) and json_schema_arrays.cpp (arrays). Private to src/grammar.
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "glass/result.h"

namespace glass::grammar::schema_detail {

using json = nlohmann::ordered_json;

// The primitive rules (name -> GBNF body), emitted when used, and the primitives each one uses.
const std::map<std::string, std::string>& primitives();
const std::map<std::string, std::vector<std::string>>& primitive_deps();
// Keywords ignored (annotations) and keywords the converter reads.
const std::set<std::string>& annotations();
const std::set<std::string>& supported();
// Whether keyword `k` is ignored: an annotation, or no keyword of JSON Schema's validation and
// applicator vocabularies (unknown keywords are annotations); those glass cannot represent are not.
bool ignored_keyword(const std::string& k);
// A value written so that equal values are written alike (1 and 1.0 alike), and whether no two of
// `values` are equal (looked up, not compared pairwise).
void write_canonical(const json& v, std::string& out);
bool all_distinct(const std::vector<json>& values);
// The JSON type of a value ("integer" for whole numbers).
std::string type_of(const json& v);
// The type names a schema's "type" lists (a string or an array of strings; others ignored).
std::set<std::string> declared_types(const json& s);

// The converter: one visit per schema node, returning a GBNF expression (usually a rule name);
// rules are deduplicated by body, so equal sub-schemas share one rule (and one set of mask tables).
class Converter {
 public:
  explicit Converter(const json& root) : root_(root) {}
  Result<std::string> run();

 private:
  Error fail(const std::string& path, const std::string& what) const;
  // A schema that matches no value (InvalidArgument, where fail() is Unsupported): an optional
  // member or an anyOf / oneOf branch of it is left out, as no valid instance holds it.
  Error fail_empty(const std::string& path, const std::string& what) const;
  static bool matches_nothing(const Error& e) { return e.code == ErrorCode::InvalidArgument; }
  std::string use(const std::string& prim);
  // A named rule for `body` (an existing one when the body is the same).
  std::string rule(const std::string& hint, const std::string& body);
  static std::string alt(const std::vector<std::string>& xs);
  Result<json> resolve(const std::string& ref, const std::string& path) const;
  // Counts visits and merges against kMaxSteps: a $ref beside other keywords, or in an allOf part, is
  // expanded where it is used (only a lone $ref becomes a shared rule), so a schema whose definitions
  // each use the next twice would take exponential time in its size.
  Status step(const std::string& path) const;
  // Schema `s` with allOf parts (and a $ref among siblings) merged into one object.
  Result<json> flatten(const json& s, const std::string& path, int depth = 0) const;
  static bool has_assertions(const json& s, const std::string& except);
  Result<json> merge(json a, const json& b, const std::string& path) const;
  Result<std::string> visit(const json& s0, const std::string& path, int depth = 0);
  // const / enum: the values as literals (compact JSON), keeping those of the sibling type.
  Result<std::string> literal_values(const std::vector<json>& values, const json& s, const std::string& path);
  Status check_disjoint(const std::vector<json>& branches, const std::string& path) const;
  Result<std::string> string_schema(const json& s, const std::string& path);
  // A pattern's grammar (`expr`) is one the matcher can follow: else an error naming the pattern.
  Status check_pattern(const std::string& expr, const std::string& pattern, const std::string& path) const;
  Result<std::string> number_schema(const json& s, const std::string& path, bool integer);
  // A grammar (GBNF text, rule root) for one sub-schema on its own, to test names against it.
  Result<std::string> grammar_of(const json& sub, const std::string& path) const;
  Result<std::string> object_schema(const json& s, const std::string& path, int depth);
  // An object schema with dependencies / dependentRequired / dependentSchemas as an anyOf of
  // objects without them (each optional member left out, or required with its dependency).
  Result<json> dependency_variants(const json& s, const std::string& path) const;
  // The texts lo..hi as one trie, by UTF-8 character: the members chosen by their keys (their JSON
  // text), or an enum's values; text j's end continues with after[j] (nothing when empty).
  std::string literal_trie(const std::vector<std::string>& keys, const std::vector<std::string>& after,
                           size_t lo, size_t hi);
  // The values an items schema allows when they are few scalars (enum / const / boolean / null),
  // distinct as validators compare them; empty when the schema is not of that kind.
  Result<std::vector<json>> finite_values(const json& items, const std::string& path) const;
  // Arrays of distinct values: one rule per set of values already written.
  Result<std::string> unique_array(const std::vector<json>& values, uint64_t mn, uint64_t mx,
                                   const std::string& path);
  Result<std::string> array_schema(const json& s, const std::string& path, int depth);

  const json& root_;
  mutable size_t steps_ = 0;
  std::map<std::string, std::string> rules_;
  std::vector<std::string> order_;
  std::map<std::string, std::string> by_body_;
  // The next suffix to try per name base: 20000 rules of one 40-character base tried every suffix
  // before theirs (22 s).
  std::map<std::string, int> next_suffix_;
  std::map<std::string, std::string> ref_rules_;
  std::set<std::string> prims_;
};

}  // namespace glass::grammar::schema_detail
