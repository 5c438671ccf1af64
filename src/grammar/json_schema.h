#pragma once
// JSON Schema -> GBNF. What the grammar generates always validates against the schema (it fails
// closed): every keyword it cannot represent exactly is an error naming the keyword and its JSON
// path ("json schema: at /properties/age: keyword 'multipleOf' is not supported"). Supported:
// type (one or a list), properties / required / additionalProperties, items / prefixItems
// (and draft-7 array `items`) / minItems / maxItems, enum, const, anyOf, oneOf (when its branches
// are provably disjoint: different JSON types or distinct constants), allOf (merged when the
// parts do not conflict), local $ref into $defs / definitions (recursion allowed), string
// minLength / maxLength / pattern (regex.h) / format (date, time, date-time, uuid, email),
// integer minimum / maximum / exclusiveMinimum / exclusiveMaximum, number minimum / maximum with
// integer values (no exponent then), boolean schemas, and annotations (title, description,
// examples, default, $schema, $id, $comment, deprecated, readOnly, writeOnly) ignored.
//
// The grammar generates a subset of the valid instances, in a canonical shape: object members in
// the schema's `properties` order with no extra members unless the object declares no properties,
// integers of at most 16 digits, no whitespace but after '{', '[', ',' and ':', strings written
// with JSON's canonical escapes. A valid instance outside that shape (members in another order,
// say) is refused by the grammar, never the reverse.
#include <memory>
#include <string>
#include <string_view>

#include "glass/result.h"

namespace glass::grammar {

Result<std::string> json_schema_to_gbnf(std::string_view schema_json);

// The grammar of any JSON object ({"type": "object"}), OpenAI's json_object mode.
std::string json_object_gbnf();

class TokenIndex;
// Builds the mask tables of the JSON primitives every schema grammar uses (strings, strings of up
// to 26 characters, numbers, literals, whitespace) into the vocabulary's table cache, so the first
// schema's first tokens do not pay for them (a few full trie walks: tens of milliseconds on a 128k
// vocabulary, once per vocabulary).
void warm_json_tables(const std::shared_ptr<const TokenIndex>& vocab);

}  // namespace glass::grammar
