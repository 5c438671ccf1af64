#!/usr/bin/env python3
"""Writes tests/grammar/schema_corpus.jsonl: realistic JSON Schemas with valid and invalid instances.

Each line: {"name", "schema", "valid": [json text...], "invalid": [json text...]}. Every instance is
checked here against its schema with python3-jsonschema (the independent oracle, formats asserted):
valid ones must validate, invalid ones must not (a mutation that happens to stay valid is dropped).
Valid instances are written the way glass's schema grammars write JSON (members in `properties`
order, no members beyond the declared ones, compact separators), so glass must accept every one;
glass must reject every invalid one. Deterministic (seeded): rerun after editing and commit the output.

    /usr/bin/python3 scripts/gen_schema_corpus.py            # writes the corpus
    /usr/bin/python3 scripts/gen_schema_corpus.py --check    # re-validates the committed corpus
"""
import copy
import datetime
import json
import os
import random
import re
import sys

import jsonschema

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "grammar", "schema_corpus.jsonl")
RFC3339_TIME = re.compile(r"^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$")


# RFC 3986 (URI and relative reference) from its ABNF, without IP literals.
_UNRES = r"A-Za-z0-9\-._~"
_SUB = r"!$&'()*+,;="
_PCT = r"%[0-9A-Fa-f]{2}"
_PCHAR = r"(?:[%s%s:@]|%s)" % (_UNRES, _SUB, _PCT)
_AUTH = r"(?:(?:[%s%s:]|%s)*@)?(?:[%s%s]|%s)*(?::[0-9]*)?" % (_UNRES, _SUB, _PCT, _UNRES, _SUB, _PCT)
_ABEMPTY = r"(?:/%s*)*" % _PCHAR
_ABSOLUTE = r"/(?:%s+(?:/%s*)*)?" % (_PCHAR, _PCHAR)
_ROOTLESS = r"%s+(?:/%s*)*" % (_PCHAR, _PCHAR)
_NOSCHEME = r"(?:[%s%s@]|%s)+(?:/%s*)*" % (_UNRES, _SUB, _PCT, _PCHAR)
_QF = r"(?:\?(?:%s|[/?])*)?(?:#(?:%s|[/?])*)?" % (_PCHAR, _PCHAR)
RFC3986_URI = re.compile(r"[A-Za-z][A-Za-z0-9+\-.]*:(?://%s%s|%s|%s|)%s" % (_AUTH, _ABEMPTY, _ABSOLUTE, _ROOTLESS, _QF))
RFC3986_REL = re.compile(r"(?://%s%s|%s|%s|)%s" % (_AUTH, _ABEMPTY, _ABSOLUTE, _NOSCHEME, _QF))
# RFC 1123 host names (what python3-jsonschema checks with the fqdn package, absent here).
HOST_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


def check_hostname(instance):
    if len(instance) > 253 or instance == "":
        return False
    labels = instance.split(".")
    return all(HOST_LABEL.fullmatch(x) for x in labels) and not labels[-1].isdigit()


def check_rfc3339(instance, schema_fmt):
    # python3-jsonschema checks time/date-time only with rfc3339-validator installed; check here.
    if schema_fmt == "time":
        return bool(RFC3339_TIME.match(instance))
    if schema_fmt == "date-time":
        if "T" not in instance:
            return False
        d, t = instance.split("T", 1)
        try:
            datetime.date.fromisoformat(d)
        except ValueError:
            return False
        return bool(RFC3339_TIME.match(t))
    return True


def formats_ok(schema, instance, root):
    """The formats the installed oracle does not check (time, date-time, hostname, uri,
    uri-reference: their checkers need packages Debian's python3-jsonschema leaves optional),
    checked by hand."""
    if isinstance(schema, bool):
        return True
    if "$ref" in schema:
        ref = schema["$ref"]
        node = root
        for part in ref[2:].split("/"):
            node = node[part]
        return formats_ok(node, instance, root)
    if isinstance(instance, str) and schema.get("format") in ("time", "date-time"):
        if not check_rfc3339(instance, schema["format"]):
            return False
    if isinstance(instance, str) and schema.get("format") == "hostname" and not check_hostname(instance):
        return False
    if isinstance(instance, str) and schema.get("format") == "uri" and not RFC3986_URI.fullmatch(instance):
        return False
    if isinstance(instance, str) and schema.get("format") == "uri-reference":
        if not (RFC3986_URI.fullmatch(instance) or RFC3986_REL.fullmatch(instance)):
            return False
    if isinstance(instance, dict):
        for k, v in instance.items():
            if k in schema.get("properties", {}) and not formats_ok(schema["properties"][k], v, root):
                return False
    if isinstance(instance, list) and isinstance(schema.get("items"), dict):
        return all(formats_ok(schema["items"], v, root) for v in instance)
    for comb in ("anyOf", "oneOf"):
        if comb in schema and not any(formats_ok(b, instance, root) for b in schema[comb]):
            return False
    return True


def is_valid(schema, text):
    try:
        instance = json.loads(text)
    except ValueError:
        return False
    cls = jsonschema.validators.validator_for(schema)
    v = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return v.is_valid(instance) and formats_ok(schema, instance, schema)


def dump(x):
    return json.dumps(x, ensure_ascii=False, separators=(",", ":"))


# ---- instance generation (canonical shape) -------------------------------------------------------

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "blue", "green", "ok", "zeta", "kappa", "Grüße", "日本",
         "café", "x", "line\nbreak", "quote\"d", "tab\there", "naïve"]


def rnd_string(rng, lo=0, hi=None):
    hi = hi if hi is not None else max(lo, 12)
    n = rng.randint(lo, hi)
    s = ""
    while len(s) < n:
        s += rng.choice(WORDS) + " "
    return s[:n]


def resolve(schema, root):
    while isinstance(schema, dict) and "$ref" in schema:
        node = root
        for part in schema["$ref"][2:].split("/"):
            node = node[part]
        schema = node
    return schema


def gen_value(schema, rng, root, depth=0):
    schema = resolve(schema, root)
    if schema is True or schema == {}:
        return rng.choice([1, "any", None, True, {"k": [1, 2]}, [1, "a"]])
    if "allOf" in schema:  # the corpus's allOf parts are objects: merge them
        merged = {"type": "object", "properties": {}, "required": []}
        for part in schema["allOf"]:
            part = resolve(part, root)
            merged["properties"].update(part.get("properties", {}))
            merged["required"] += part.get("required", [])
        return gen_value(merged, rng, root, depth)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for comb in ("anyOf", "oneOf"):
        if comb in schema:
            branches = schema[comb]
            if depth > 4:
                for b in branches:
                    if resolve(b, root).get("type") == "null":
                        return None
            return gen_value(rng.choice(branches), rng, root, depth + 1)
    t = schema.get("type")
    if isinstance(t, list):
        t = rng.choice(t)
        if depth > 4 and "null" in schema["type"]:
            t = "null"
    if t == "null":
        return None
    if t == "boolean":
        return rng.choice([True, False])
    if t == "integer":
        lo = schema.get("minimum", schema.get("exclusiveMinimum", -1000) + (1 if "exclusiveMinimum" in schema else 0))
        hi = schema.get("maximum", schema.get("exclusiveMaximum", 100000) - (1 if "exclusiveMaximum" in schema else 0))
        return rng.randint(int(lo), int(hi))
    if t == "number":
        lo = schema.get("minimum", -1000)
        hi = schema.get("maximum", 1000)
        return round(rng.uniform(lo, hi), 2)
    if t == "string":
        f = schema.get("format")
        if f == "date":
            return "%04d-%02d-%02d" % (rng.randint(1990, 2030), rng.randint(1, 12), rng.randint(1, 28))
        if f == "time":
            return "%02d:%02d:%02dZ" % (rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))
        if f == "date-time":
            return "%04d-%02d-%02dT%02d:%02d:%02d+01:00" % (rng.randint(1990, 2030), rng.randint(1, 12),
                                                           rng.randint(1, 28), rng.randint(0, 23),
                                                           rng.randint(0, 59), rng.randint(0, 59))
        if f == "uuid":
            h = "".join(rng.choice("0123456789abcdef") for _ in range(32))
            return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])
        if f == "email":
            return rng.choice(["ann", "bob.smith", "x_y+z"]) + "@" + rng.choice(["example.com", "mail.example.org"])
        if "pattern" in schema:
            return PATTERN_EXAMPLES[schema["pattern"]](rng)
        return rnd_string(rng, schema.get("minLength", 0), schema.get("maxLength"))
    if t == "array":
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems", lo + 3)
        prefix = schema.get("prefixItems", [])
        n = rng.randint(lo, hi) if depth < 4 else lo
        items = schema.get("items", True)
        if items is False:
            n = min(n, len(prefix))
        out = []
        for i in range(n):
            out.append(gen_value(prefix[i] if i < len(prefix) else items, rng, root, depth + 1))
        return out
    if t == "object" or "properties" in schema:
        props = schema.get("properties", {})
        req = set(schema.get("required", []))
        out = {}
        for k, v in props.items():
            if k in req or (depth < 4 and rng.random() < 0.6):
                out[k] = gen_value(v, rng, root, depth + 1)
        if not props and schema.get("additionalProperties", True) is not False:
            addl = schema.get("additionalProperties", True)
            for i in range(rng.randint(0, 3)):
                out["k%d" % i] = gen_value(addl, rng, root, depth + 1)
        return out
    return None


PATTERN_EXAMPLES = {
    "^[A-Z]{3}-[0-9]{4}$": lambda r: "".join(r.choice("ABCXYZ") for _ in range(3)) + "-%04d" % r.randint(0, 9999),
    "^\\+?[0-9]{7,12}$": lambda r: "+" + "".join(r.choice("0123456789") for _ in range(r.randint(7, 12))),
    "^[a-z0-9_-]{3,16}$": lambda r: "".join(r.choice("abc123_-") for _ in range(r.randint(3, 16))),
    "^#[0-9a-fA-F]{6}$": lambda r: "#" + "".join(r.choice("0123456789abcdefABCDEF") for _ in range(6)),
    "^v\\d+\\.\\d+\\.\\d+$": lambda r: "v%d.%d.%d" % (r.randint(0, 9), r.randint(0, 20), r.randint(0, 99)),
    "^(GET|POST|PUT|DELETE)$": lambda r: r.choice(["GET", "POST", "PUT", "DELETE"]),
    "^[A-Z]{2}\\d{2}[A-Z0-9]{4,20}$": lambda r: "DE%02d" % r.randint(0, 99) + "".join(r.choice("AB12") for _ in range(r.randint(4, 20))),
    "[a-z]+@": lambda r: "say " + "".join(r.choice("xyz") for _ in range(r.randint(1, 5))) + "@ here",
}


# ---- invalid instances ----------------------------------------------------------------------------

def mutations(schema, value, rng, root):
    """Candidate invalid texts; the oracle decides which really are invalid."""
    out = []
    text = dump(value)
    if len(text) > 2:
        out.append(text[: rng.randint(1, len(text) - 1)])  # truncated
    out.append(text + "}")  # trailing garbage
    out.append(dump(["not", "this"]) if not isinstance(value, list) else dump({"not": "this"}))
    s = resolve(schema, root)
    if isinstance(value, dict) and isinstance(s, dict):
        props = s.get("properties", {})
        for k in list(s.get("required", []))[:3]:
            if k in value:
                v = dict(value)
                del v[k]
                out.append(dump(v))
        for k, v in list(value.items())[:4]:
            ps = resolve(props.get(k, {}), root)
            for bad in wrong_values(ps):
                w = dict(value)
                w[k] = bad
                out.append(dump(w))
        if s.get("additionalProperties") is False:
            w = dict(value)
            w["unexpected_extra"] = 1
            out.append(dump(w))
    if isinstance(value, list) and isinstance(s, dict):
        out.append(dump(value + value + value + value + [value[0] if value else 1]))
        if value:
            out.append(dump(value[:-1] + [{"wrong": True}]))
    if not isinstance(value, (dict, list)):
        for bad in wrong_values(s):
            out.append(dump(bad))
    return out


def wrong_values(s):
    if not isinstance(s, dict):
        return []
    t = s.get("type")
    bad = []
    if "enum" in s:
        bad.append("definitely-not-in-enum")
    if "const" in s:
        bad.append(["not", "const"])
    if t == "integer":
        bad += ["12", 1.5, s.get("maximum", 10 ** 20) + 1 if "maximum" in s else None, s.get("minimum", 0) - 1 if "minimum" in s else None]
    if t == "number":
        bad += ["1.5", s.get("maximum", 0) + 0.5 if "maximum" in s else None]
    if t == "string":
        bad += [42, None]
        if "maxLength" in s:
            bad.append("y" * (s["maxLength"] + 1))
        if "minLength" in s and s["minLength"] > 0:
            bad.append("y" * (s["minLength"] - 1))
        if "format" in s:
            bad += ["2024-02-30", "not a " + s["format"], "25:00:00Z", "2024-13-01T00:00:00Z"]
        if "pattern" in s:
            bad += ["!!", "abc"]
    if t == "boolean":
        bad += ["true", 0]
    if t == "array":
        bad += [{"a": 1}, "[]"]
        if "minItems" in s and s["minItems"] > 0:
            bad.append([])
    if t == "object":
        bad += [[], "obj"]
    return [b for b in bad if b is not None] or [["wrong"]]


# ---- schemas ---------------------------------------------------------------------------------------

def hand_written():
    addr = {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"},
                                             "zip": {"type": "string", "pattern": "^\\+?[0-9]{7,12}$"},
                                             "country": {"type": "string", "enum": ["DE", "FR", "US", "JP"]}},
            "required": ["street", "city", "country"], "additionalProperties": False}
    return [
        ("user_profile", {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "User",
                          "type": "object",
                          "properties": {"id": {"type": "integer", "minimum": 1}, "name": {"type": "string", "minLength": 1, "maxLength": 40},
                                         "email": {"type": "string", "format": "email"}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
                                         "tags": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 5},
                                         "active": {"type": "boolean"}},
                          "required": ["id", "name", "email"], "additionalProperties": False}),
        ("order_with_items", {"type": "object", "properties": {
            "order_id": {"type": "string", "format": "uuid"},
            "created": {"type": "string", "format": "date-time"},
            "items": {"type": "array", "minItems": 1, "maxItems": 4, "items": {"type": "object", "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, "qty": {"type": "integer", "minimum": 1, "maximum": 99},
                "price": {"type": "number", "minimum": 0}}, "required": ["sku", "qty"], "additionalProperties": False}},
            "status": {"enum": ["pending", "paid", "shipped", "cancelled"]}}, "required": ["order_id", "items", "status"],
            "additionalProperties": False}),
        ("address_ref", {"$defs": {"address": addr}, "type": "object", "properties": {
            "billing": {"$ref": "#/$defs/address"}, "shipping": {"$ref": "#/$defs/address"}}, "required": ["billing"],
            "additionalProperties": False}),
        ("api_error", {"type": "object", "properties": {"error": {"type": "object", "properties": {
            "code": {"type": "integer", "minimum": 400, "maximum": 599}, "message": {"type": "string"},
            "details": {"type": "array", "items": {"type": "string"}}}, "required": ["code", "message"], "additionalProperties": False}},
            "required": ["error"], "additionalProperties": False}),
        ("paginated_users", {"type": "object", "properties": {"page": {"type": "integer", "minimum": 1}, "per_page": {"type": "integer", "minimum": 1, "maximum": 100},
                                                            "total": {"type": "integer", "minimum": 0},
                                                            "data": {"type": "array", "maxItems": 3, "items": {"type": "object", "properties": {
                                                                "id": {"type": "integer"}, "login": {"type": "string", "pattern": "^[a-z0-9_-]{3,16}$"}},
                                                                "required": ["id", "login"], "additionalProperties": False}}},
                             "required": ["page", "data"], "additionalProperties": False}),
        ("weather", {"type": "object", "properties": {"city": {"type": "string"}, "date": {"type": "string", "format": "date"},
                                                    "temperature_c": {"type": "number", "minimum": -90, "maximum": 60},
                                                    "conditions": {"enum": ["sunny", "cloudy", "rain", "snow"]},
                                                    "wind_kmh": {"type": "integer", "minimum": 0, "maximum": 400}},
                     "required": ["city", "date", "temperature_c"], "additionalProperties": False}),
        ("tree_recursive", {"$defs": {"node": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                                                                "children": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/node"}}},
                                               "required": ["name"], "additionalProperties": False}},
                            "$ref": "#/$defs/node"}),
        ("linked_list", {"$defs": {"cell": {"type": "object", "properties": {"v": {"type": "integer"},
                                                                             "next": {"anyOf": [{"$ref": "#/$defs/cell"}, {"type": "null"}]}},
                                            "required": ["v", "next"], "additionalProperties": False}}, "$ref": "#/$defs/cell"}),
        ("tool_call", {"type": "object", "properties": {"name": {"const": "get_weather"}, "arguments": {"type": "object", "properties": {
            "location": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["location"], "additionalProperties": False}},
            "required": ["name", "arguments"], "additionalProperties": False}),
        ("chat_message", {"type": "object", "properties": {"role": {"enum": ["system", "user", "assistant", "tool"]},
                                                         "content": {"type": ["string", "null"]},
                                                         "tool_calls": {"type": "array", "items": {"type": "object", "properties": {
                                                             "id": {"type": "string"}, "type": {"const": "function"},
                                                             "function": {"type": "object", "properties": {"name": {"type": "string"}, "arguments": {"type": "string"}},
                                                                          "required": ["name", "arguments"], "additionalProperties": False}},
                                                             "required": ["id", "type", "function"], "additionalProperties": False}, "maxItems": 2}},
                          "required": ["role", "content"], "additionalProperties": False}),
        ("event", {"type": "object", "properties": {"title": {"type": "string", "minLength": 3, "maxLength": 60}, "start": {"type": "string", "format": "date-time"},
                                                  "end": {"type": "string", "format": "date-time"}, "all_day": {"type": "boolean"},
                                                  "color": {"type": "string", "pattern": "^#[0-9a-fA-F]{6}$"},
                                                  "attendees": {"type": "array", "items": {"type": "string", "format": "email"}, "maxItems": 3}},
                   "required": ["title", "start"], "additionalProperties": False}),
        ("product_catalog", {"type": "array", "maxItems": 3, "items": {"type": "object", "properties": {
            "id": {"type": "integer", "minimum": 1, "maximum": 999999}, "name": {"type": "string"}, "price": {"type": "number", "minimum": 0, "maximum": 10000},
            "currency": {"enum": ["EUR", "USD", "JPY"]}, "in_stock": {"type": "boolean"}, "dimensions": {"type": "object", "properties": {
                "w": {"type": "number", "minimum": 0}, "h": {"type": "number", "minimum": 0}}, "required": ["w", "h"], "additionalProperties": False}},
            "required": ["id", "name", "price"], "additionalProperties": False}}),
        ("geo_point", {"type": "object", "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90},
                                                      "lon": {"type": "number", "minimum": -180, "maximum": 180}}, "required": ["lat", "lon"], "additionalProperties": False}),
        ("invoice", {"type": "object", "properties": {"number": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, "issued": {"type": "string", "format": "date"},
                                                    "lines": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "object", "properties": {
                                                        "desc": {"type": "string", "maxLength": 30}, "amount": {"type": "integer", "minimum": -100000, "maximum": 100000}},
                                                        "required": ["desc", "amount"], "additionalProperties": False}},
                                                    "iban": {"type": "string", "pattern": "^[A-Z]{2}\\d{2}[A-Z0-9]{4,20}$"}}, "required": ["number", "issued", "lines"], "additionalProperties": False}),
        ("config_file", {"type": "object", "properties": {"version": {"type": "string", "pattern": "^v\\d+\\.\\d+\\.\\d+$"},
                                                        "log_level": {"enum": ["debug", "info", "warn", "error"]}, "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                                                        "features": {"type": "object", "additionalProperties": {"type": "boolean"}},
                                                        "endpoints": {"type": "array", "items": {"type": "object", "properties": {
                                                            "method": {"type": "string", "pattern": "^(GET|POST|PUT|DELETE)$"}, "path": {"type": "string"}},
                                                            "required": ["method", "path"], "additionalProperties": False}, "maxItems": 3}},
                         "required": ["version", "port"], "additionalProperties": False}),
        ("shape_oneof", {"oneOf": [{"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "minimum": 0}},
                                    "required": ["kind", "r"], "additionalProperties": False},
                                   {"type": "object", "properties": {"kind": {"const": "rect"}, "w": {"type": "number", "minimum": 0}, "h": {"type": "number", "minimum": 0}},
                                    "required": ["kind", "w", "h"], "additionalProperties": False}]}),
        ("allof_merge", {"allOf": [{"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
                                   {"properties": {"label": {"type": "string", "maxLength": 20}}, "required": ["label"]}]}),
        ("tuple_point", {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}, {"enum": ["m", "ft"]}], "items": False, "minItems": 2}),
        ("json_mode", {"type": "object"}),
        ("nullable_fields", {"type": "object", "properties": {"a": {"type": ["integer", "null"]}, "b": {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "null"}]},
                                                            "c": {"type": "array", "items": {"type": ["boolean", "null"]}, "maxItems": 4}},
                             "required": ["a", "b", "c"], "additionalProperties": False}),
        ("mention_pattern", {"type": "object", "properties": {"text": {"type": "string", "pattern": "[a-z]+@"}}, "required": ["text"], "additionalProperties": False}),
        ("sensor_batch", {"type": "object", "properties": {"device": {"type": "string", "format": "uuid"}, "readings": {"type": "array", "maxItems": 4, "items": {
            "type": "object", "properties": {"t": {"type": "string", "format": "time"}, "value": {"type": "number"}, "ok": {"type": "boolean"}},
            "required": ["t", "value"], "additionalProperties": False}}}, "required": ["device", "readings"], "additionalProperties": False}),
    ]


def generated(rng, n):
    """Random realistic object schemas: nested objects, arrays of objects, enums, optional fields, refs."""
    names = ["id", "name", "title", "status", "count", "price", "email", "created_at", "tags", "owner", "items", "score",
             "enabled", "kind", "notes", "url_slug", "level", "date", "color", "version", "priority", "meta"]

    def leaf(depth):
        r = rng.random()
        if r < 0.22:
            s = {"type": "string"}
            if rng.random() < 0.4:
                s["maxLength"] = rng.randint(3, 30)
                if rng.random() < 0.5:
                    s["minLength"] = rng.randint(0, 3)
            return s
        if r < 0.34:
            s = {"type": "integer"}
            if rng.random() < 0.6:
                lo = rng.choice([0, 1, -10, 100, -1000])
                s["minimum"] = lo
                if rng.random() < 0.7:
                    s["maximum"] = lo + rng.choice([9, 99, 1000, 123456])
            return s
        if r < 0.42:
            s = {"type": "number"}
            if rng.random() < 0.4:
                s["minimum"] = rng.choice([0, -100])
                s["maximum"] = rng.choice([1, 100, 5000])
            return s
        if r < 0.50:
            return {"type": "boolean"}
        if r < 0.60:
            return {"enum": rng.sample(["low", "medium", "high", "urgent", "none", "red", "green", "blue", "x-large"], rng.randint(2, 5))}
        if r < 0.66:
            return {"type": "string", "format": rng.choice(["date", "date-time", "uuid", "email", "time"])}
        if r < 0.70:
            return {"type": "string", "pattern": rng.choice(list(PATTERN_EXAMPLES))}
        if r < 0.75:
            return {"type": [rng.choice(["string", "integer", "boolean"]), "null"]}
        if r < 0.80:
            return {"const": rng.choice(["v1", 2, True])}
        if depth < 2 and r < 0.90:
            return {"type": "array", "items": obj(depth + 1) if rng.random() < 0.5 else leaf(depth + 1),
                    "maxItems": rng.randint(1, 4), **({"minItems": 1} if rng.random() < 0.3 else {})}
        if depth < 2:
            return obj(depth + 1)
        return {"type": "string"}

    def obj(depth):
        k = rng.randint(1, 6)
        props = {}
        for name in rng.sample(names, k):
            props[name] = leaf(depth)
        req = [p for p in props if rng.random() < 0.6]
        s = {"type": "object", "properties": props, "additionalProperties": False}
        if req:
            s["required"] = req
        if rng.random() < 0.2:
            s["description"] = "generated object"
        return s

    out = []
    for i in range(n):
        s = obj(0)
        if rng.random() < 0.25:  # move a sub-object into $defs and refer to it (twice when possible)
            for k, v in list(s["properties"].items()):
                if isinstance(v, dict) and v.get("type") == "object":
                    s["$defs"] = {"sub": v}
                    s["properties"][k] = {"$ref": "#/$defs/sub"}
                    break
        out.append(("gen_%03d" % i, s))
    return out


def keyword_schemas():
    """Schemas for the keywords beyond the first corpus (multipleOf, fractional and exclusive bounds,
    pattern with lengths, more formats, patternProperties, propertyNames, uniqueItems), each with
    hand-picked valid instances (in the grammars' canonical shape) and near-miss invalid ones."""
    draft4 = "http://json-schema.org/draft-04/schema#"
    return [
        ("kw_multiple_of", {"type": "integer", "multipleOf": 3},
         [0, 3, -9, 999999, 123456789012], [10, 1, -4, 3.5, "3", 1000000000000001, 20]),
        ("kw_multiple_of_range", {"type": "integer", "multipleOf": 5, "minimum": 12, "maximum": 1000},
         [15, 1000, 500, 995], [10, 1005, 13, 0, 12, -15]),
        ("kw_multiple_of_number", {"type": "number", "multipleOf": 4, "minimum": -20},
         [-20, 0, 16, 4000], [-24, 6, 2.5, -21, "8"]),
        ("kw_multiple_of_negative", {"type": "integer", "multipleOf": 7, "maximum": -1},
         [-7, -700, -49], [0, 7, -8, -1]),
        ("kw_minimum_fraction", {"type": "number", "minimum": 0.5},
         [0.5, 0.51, 1, 100.25, 0.5000000000000001, 3], [0.49, 0.4999, -1, 0, "0.5", 0.4999999999]),
        ("kw_exclusive_unit", {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
         [0.5, 0.0001, 0.9999, 0.1], [0, 1, 1.0, -0.1, 1.5, 0.0]),
        ("kw_fraction_range", {"type": "number", "minimum": -2.75, "maximum": 3.14},
         [-2.75, -2.7, 0, 3.14, 3.1, 3, -0.5], [3.15, -2.76, 3.141, 4, -3]),
        ("kw_exclusive_negative", {"type": "number", "exclusiveMaximum": -0.5},
         [-0.6, -1, -100.5, -0.5001], [-0.5, 0, -0.49, 1]),
        ("kw_integer_fraction_bounds", {"type": "integer", "minimum": 0.5, "exclusiveMaximum": 10.5},
         [1, 10, 5], [0, 11, 0.5, -1]),
        ("kw_integer_exclusive", {"type": "integer", "exclusiveMinimum": -3, "exclusiveMaximum": 3},
         [-2, 2, 0], [-3, 3, 4, -4]),
        ("kw_draft4_exclusive", {"$schema": draft4, "type": "number", "minimum": 1, "exclusiveMinimum": True,
                                 "maximum": 2, "exclusiveMaximum": True},
         [1.5, 1.0001, 1.9], [1, 2, 2.0, 1.0, 0.5, 2.5]),
        ("kw_price", {"type": "object", "properties": {
            "price": {"type": "number", "exclusiveMinimum": 0, "maximum": 999.99},
            "discount": {"type": "number", "minimum": 0, "maximum": 0.5},
            "pack": {"type": "integer", "multipleOf": 6, "exclusiveMaximum": 100}},
            "required": ["price"], "additionalProperties": False},
         [{"price": 9.99}, {"price": 999.99, "discount": 0.5}, {"price": 0.01, "discount": 0, "pack": 96}],
         [{"price": 0}, {"price": 1000}, {"price": 999.991}, {"price": 1, "discount": 0.51}, {"price": 1, "pack": 100},
          {"price": 1, "pack": 97}, {"discount": 0.1}]),
        ("kw_pattern_max_length", {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
         ["abc", "abcde", "a"], ["abcdef", "", "ABC", "ab1", 5]),
        ("kw_pattern_length_redundant", {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$", "minLength": 8,
                                         "maxLength": 8},
         ["ABC-1234", "XYZ-0000"], ["AB-1234", "ABCD-1234", "ABC-123"]),
        ("kw_pattern_length_search", {"type": "string", "pattern": "[0-9]", "minLength": 2, "maxLength": 4},
         ["12", "1234", "007"], ["1", "12345", "ab", ""]),
        ("kw_pattern_min_length", {"type": "string", "pattern": "^\\w+$", "minLength": 3},
         ["abc", "a_b9", "abcdefghijklmnop"], ["ab", "a b c", "", "ab!"]),
        ("kw_slug", {"type": "object", "properties": {
            "slug": {"type": "string", "pattern": "^[a-z0-9-]+$", "minLength": 3, "maxLength": 12},
            "code": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}$", "maxLength": 10}},
            "required": ["slug"], "additionalProperties": False},
         [{"slug": "abc"}, {"slug": "my-post-12", "code": "AB12"}, {"slug": "abcdefghijkl"}],
         [{"slug": "ab"}, {"slug": "abcdefghijklm"}, {"slug": "Abc"}, {"slug": "abc", "code": "AB123"}]),
        ("kw_ipv4", {"type": "string", "format": "ipv4"},
         ["192.168.0.1", "0.0.0.0", "255.255.255.255", "10.0.42.7"],
         ["256.1.1.1", "1.2.3", "01.2.3.4", "1.2.3.4.5", "a.b.c.d", "1.2.3.256", ""]),
        ("kw_ipv6", {"type": "string", "format": "ipv6"},
         ["2001:db8:0:0:0:0:0:1", "::", "::1", "fe80::", "1:2:3:4:5:6:7::", "::ffff:0:1"],
         ["2001:db8::1::", "12345::", ":::", "1:2:3:4:5:6:7:8:9", "g::1", "1.2.3.4"]),
        ("kw_hostname", {"type": "string", "format": "hostname"},
         ["example.com", "a-b.example.org", "localhost", "x1.y2.z3.example.net"],
         ["-a.com", "a..com", "a_b.com", "a" * 70 + ".com", "ex ample.com", "a-.com", ""]),
        ("kw_uri", {"type": "string", "format": "uri"},
         ["https://example.com/a/b?x=1#frag", "http://localhost:8080/", "ftp://files.example.org",
          "https://example.com/%20x/~u"],
         ["example.com", "http://exa mple.com", "://x", "1http://a.com", "http://a.com/%zz", "/relative"]),
        ("kw_uri_reference", {"type": "string", "format": "uri-reference"},
         ["/path/to?q=1", "#top", "https://a.b/c", "/"],
         ["a b", "%zz", "#a b", "/p q", "http://a.com/%g0"]),
        ("kw_date_leap", {"type": "string", "format": "date"},
         ["2024-02-29", "2000-02-29", "2023-02-28", "1996-02-29", "2024-12-31"],
         ["2023-02-29", "1900-02-29", "2024-02-30", "2100-02-29", "2024-13-01"]),
        ("kw_pattern_properties", {"type": "object", "properties": {
            "x_count": {"type": "integer"}, "name": {"type": "string"}},
            "patternProperties": {"^x_": {"minimum": 0, "maximum": 10}},
            "required": ["x_count"], "additionalProperties": False},
         [{"x_count": 5, "name": "a"}, {"x_count": 0}, {"x_count": 10}],
         [{"x_count": 11}, {"x_count": -1}, {"name": "a"}, {"x_count": 5, "y": 1}]),
        ("kw_pattern_properties_only", {"type": "object", "patternProperties": {"^[a-z]{1,8}$": {"type": "integer"}},
                                        "additionalProperties": False},
         [{"abc": 1, "b": 2}, {}, {"abcdefgh": -5}],
         [{"ABC": 1}, {"abc": "x"}, {"abcdefghi": 1}, {"": 1}]),
        ("kw_property_names", {"type": "object", "propertyNames": {"maxLength": 3},
                               "additionalProperties": {"type": "boolean"}},
         [{"a": True, "abc": False}, {}, {"xyz": True}],
         [{"abcd": True}, {"a": 1}, {"abcdefgh": False}]),
        ("kw_property_names_declared", {"type": "object", "properties": {
            "id": {"type": "integer"}, "very_long_name": {"type": "string"}},
            "propertyNames": {"pattern": "^[a-z]{1,4}$"}, "required": ["id"]},
         [{"id": 1}, {"id": -20}],
         [{"id": 1, "very_long_name": "x"}, {}, {"id": "1"}]),
        ("kw_unique_single", {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "maxItems": 1},
         [[], [3]], [[1, 1], [1, 2], ["a"]]),
        ("kw_unique_enum", {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "uniqueItems": True,
                            "minItems": 1},
         [["red"], ["blue", "red"], ["green", "blue", "red"]],
         [["red", "red"], [], ["red", "green", "red"], ["pink"], ["blue", "green", "blue"]]),
        ("kw_unique_boolean", {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True},
         [[], [True], [False, True]], [[True, True], [False, True, False], [1]]),
        ("kw_unique_tags", {"type": "object", "properties": {
            "tags": {"type": "array", "items": {"enum": ["a", "b", 1, None]}, "uniqueItems": True, "maxItems": 3}},
            "required": ["tags"], "additionalProperties": False},
         [{"tags": []}, {"tags": [1, "a", None]}, {"tags": [None]}],
         [{"tags": [1, 1]}, {"tags": ["a", "b", 1, None]}, {"tags": [None, None]}, {"tags": ["a", "a"]}]),
        ("kw_server_config", {"type": "object", "properties": {
            "host": {"type": "string", "format": "hostname"}, "ip": {"type": "string", "format": "ipv4"},
            "ip6": {"type": "string", "format": "ipv6"},
            "port": {"type": "integer", "minimum": 1024, "maximum": 65535},
            "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": 30},
            "batch": {"type": "integer", "multipleOf": 8, "minimum": 8, "maximum": 512},
            "home": {"type": "string", "format": "uri"}},
            "required": ["host", "port"], "additionalProperties": False},
         [{"host": "api.example.com", "port": 8443}, {"host": "db1", "ip": "10.1.2.3", "port": 5432, "timeout_s": 2.5},
          {"host": "x.org", "ip6": "::1", "port": 1024, "batch": 64, "home": "https://x.org/"}],
         [{"host": "api.example.com", "port": 80}, {"host": "db1", "ip": "10.1.2.300", "port": 5432},
          {"host": "x", "port": 2000, "timeout_s": 0}, {"host": "x", "port": 2000, "batch": 60},
          {"host": "x", "port": 2000, "home": "not a uri"}, {"host": "-x", "port": 2000},
          {"host": "x", "port": 2000, "timeout_s": 30.5}]),
    ]


def build_keywords():
    out = []
    for name, schema, valid, invalid in keyword_schemas():
        v = [dump(x) for x in valid]
        bad = [dump(x) for x in invalid]
        for t in v:
            if not is_valid(schema, t):
                raise SystemExit("keyword corpus: %s: %s is not valid" % (name, t))
        for t in bad:
            if is_valid(schema, t):
                raise SystemExit("keyword corpus: %s: %s is valid" % (name, t))
        out.append({"name": name, "schema": schema, "valid": v, "invalid": bad})
    return out


def build():
    rng = random.Random(20261202)
    corpus = []
    for name, schema in hand_written() + generated(rng, 200):
        valid, invalid = [], []
        for _ in range(40):
            v = gen_value(schema, rng, schema)
            t = dump(v)
            if len(valid) < 4 and t not in valid:
                if not is_valid(schema, t):
                    raise SystemExit("generator bug: %s: %s is not valid" % (name, t))
                valid.append(t)
            for m in mutations(schema, v, rng, schema):
                if len(invalid) < 6 and m not in invalid and not is_valid(schema, m):
                    invalid.append(m)
            if len(valid) >= 4 and len(invalid) >= 6:
                break
        corpus.append({"name": name, "schema": schema, "valid": valid, "invalid": invalid})
    return corpus + build_keywords()


def check(corpus):
    bad = 0
    for entry in corpus:
        for t in entry["valid"]:
            if not is_valid(entry["schema"], t):
                print("valid instance fails the oracle:", entry["name"], t)
                bad += 1
        for t in entry["invalid"]:
            if is_valid(entry["schema"], t):
                print("invalid instance passes the oracle:", entry["name"], t)
                bad += 1
    return bad


def main():
    if "--check" in sys.argv:
        with open(OUT, encoding="utf-8") as f:
            corpus = [json.loads(line) for line in f]
        bad = check(corpus)
        print("%d schemas, %d problems" % (len(corpus), bad))
        return 1 if bad else 0
    corpus = build()
    assert check(corpus) == 0
    with open(OUT, "w", encoding="utf-8") as f:
        for e in corpus:
            f.write(json.dumps(e, ensure_ascii=False) + "\n")
    print("wrote %d schemas (%d valid, %d invalid instances) to %s" % (
        len(corpus), sum(len(e["valid"]) for e in corpus), sum(len(e["invalid"]) for e in corpus), OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
