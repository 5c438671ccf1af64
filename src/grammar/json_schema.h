#pragma once
// JSON Schema -> GBNF. What the grammar generates always validates against the schema (it fails
// closed): every keyword it cannot represent exactly is an error naming the keyword and its JSON
// path ("json schema: at #/properties/tags/uniqueItems: keyword 'uniqueItems' is supported only
// with maxItems 0 or 1 ..."). Supported: type (one or a list), properties / required /
// additionalProperties, patternProperties (a declared property whose name matches must satisfy
// both; without properties, one pattern's names and schema), propertyNames (declared names it
// refuses are left out; without properties, member names follow it), items / prefixItems (and
// draft-7 array `items`) / minItems / maxItems, uniqueItems (at most one item, or items from at
// most 8 enum / const / boolean / null values), enum, const,
// anyOf, oneOf (when its branches are provably disjoint: different JSON types or distinct
// constants), allOf (merged when the parts do not conflict), local $ref into $defs / definitions
// (recursion allowed), string minLength / maxLength / pattern (regex.h; with lengths as
// json_schema_strings.h allows) / format (date, time, date-time, uuid, email, ipv4, ipv6, hostname,
// uri, uri-reference), integer and number minimum / maximum / exclusiveMinimum / exclusiveMaximum
// of any value within ±1e15 (draft 4's boolean forms under a draft-04 $schema), whole multipleOf
// (json_schema_numbers.h), boolean schemas, and annotations (title, description, examples,
// default, $schema, $id, $comment, deprecated, readOnly, writeOnly) ignored. Still errors:
// fractional multipleOf, uniqueItems over more items, contains, minProperties, if / then, remote
// $ref, format with lengths or a pattern, and patterns or combinations a grammar cannot intersect.
//
// The grammar generates a subset of the valid instances, in a canonical shape: object members in
// the schema's `properties` order with no extra members unless the object declares no properties,
// integers of at most 16 digits, bounded numbers without exponent, no whitespace but after '{', '[', ',' and
// ':', strings written with JSON's canonical escapes. A valid instance outside that shape (members in another
// order, say) is refused by the grammar, never the reverse.
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
