#!/usr/bin/env python3
"""Reference implementation of catalock-digest-v1 (docs/digest-spec.md).

Written from the specification, independently of the Rust code, with the Python 3.11 standard
library only. It computes every digest of the specification except the token count of the
economy section: o200k_base is not in the standard library, so the count is taken as given and
only the economy digest is computed from it.

Usage:
    catalock_digest.py PATH...           check test vectors (files or directories of *.json);
                                         exit 0 when every vector agrees, 1 otherwise
    catalock_digest.py --tool FILE [--tokens N]
                                         print the sections and digests of one tool object

Before the vectors, a self-test checks the number formatting against the samples of
RFC 8785 Appendix B and the key order against the example of RFC 8785 section 3.2.3.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import struct
import sys
from typing import Any

ALGORITHM = "catalock-digest-v1"
CATALOG_FORMAT = "ram-tool-catalog-v1"
TOKENIZER = "o200k_base"

# Top-level tool keys of the surface section.
SURFACE_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "icons")
# The annotation hints of the permissions section and their defaults (MCP ToolAnnotations).
HINT_DEFAULTS = {
    "readOnlyHint": False,
    "destructiveHint": True,
    "idempotentHint": False,
    "openWorldHint": True,
}
# What a model is shown of a tool; the economy section counts it.
MODEL_VIEW_KEYS = ("name", "description", "inputSchema")
# The keys a tool keeps in the catalog revision.
CATALOG_KEYS = ("name", "title", "description", "inputSchema", "annotations")


class DigestError(Exception):
    """An input the algorithm rejects."""


# ---------------------------------------------------------------------------------------------
# Strict JSON input: duplicate keys, non-finite numbers and lone surrogates are rejected; every
# number becomes the IEEE-754 double nearest to its decimal value (float() rounds correctly).


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise DigestError(f"duplicate object key {key!r}")
        obj[key] = value
    return obj


def _number(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise DigestError(f"number {text} is out of the range of a double")
    return value


def _constant(text: str) -> Any:
    raise DigestError(f"{text} is not JSON")


def _check_scalars(value: Any) -> None:
    """Rejects strings with a lone surrogate (from a \\uD800-style escape): not Unicode text."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            strings = [v]
        elif isinstance(v, list):
            stack.extend(v)
            continue
        elif isinstance(v, dict):
            stack.extend(v.values())
            strings = list(v.keys())
        else:
            continue
        for s in strings:
            if any(0xD800 <= ord(c) <= 0xDFFF for c in s):
                raise DigestError(f"string {s!r} holds a lone surrogate")


def parse_json(text: str) -> Any:
    """Parses one JSON text strictly. Numbers are floats; there are no ints."""
    try:
        value = json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_float=_number,
            parse_int=_number,
            parse_constant=_constant,
        )
    except json.JSONDecodeError as e:
        raise DigestError(f"invalid JSON: {e}") from None
    _check_scalars(value)
    return value


# ---------------------------------------------------------------------------------------------
# RFC 8785 (JCS) output.


def es_number(x: float) -> str:
    """ECMAScript Number::toString(x) for a finite double (ECMA-262, Number::toString)."""
    if math.isnan(x) or math.isinf(x):
        raise DigestError("NaN and Infinity have no JSON form")
    if x == 0:
        return "0"  # also for -0
    if x < 0:
        return "-" + es_number(-x)
    # repr() gives the shortest decimal digits that round-trip to x, the closest such to x
    # (sys.float_repr_style == "short"): the digits s and exponent n of the ECMAScript algorithm.
    mantissa, _, exponent = repr(x).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)  # x = 0.digits * 10^point
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    s = stripped.rstrip("0")
    k, n = len(s), point  # x = s * 10^(n-k), s without trailing zeros
    if k <= n <= 21:
        return s + "0" * (n - k)
    if 0 < n <= 21:
        return s[:n] + "." + s[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + s
    e = n - 1
    sign = "+" if e >= 0 else "-"
    head = s if k == 1 else s[0] + "." + s[1:]
    return f"{head}e{sign}{abs(e)}"


_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


def quote(s: str) -> str:
    """A JSON string as ECMAScript JSON.stringify writes it (RFC 8785 section 3.2.2.2)."""
    out = ['"']
    for c in s:
        if c in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[c])
        elif ord(c) < 0x20:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)


def utf16_key(key: str) -> bytes:
    """Sort key of RFC 8785 section 3.2.3: the UTF-16 code units (big-endian bytes compare
    like the units)."""
    return key.encode("utf-16-be")


def canonical(value: Any) -> str:
    """Compact RFC 8785 text of a parsed JSON value."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return es_number(float(value))
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, list):
        return "[" + ",".join(canonical(v) for v in value) + "]"
    if isinstance(value, dict):
        keys = sorted(value, key=utf16_key)
        return "{" + ",".join(quote(k) + ":" + canonical(value[k]) for k in keys) + "}"
    raise TypeError(f"not a JSON value: {value!r}")


# ---------------------------------------------------------------------------------------------
# Digests.


def tagged(tag: str, canonical_text: str) -> str:
    """SHA-256("catalock-digest-v1/" || tag || 0x00 || canonical bytes), written sha256:<hex>."""
    h = hashlib.sha256()
    h.update(f"{ALGORITHM}/{tag}".encode("ascii"))
    h.update(b"\x00")
    h.update(canonical_text.encode("utf-8"))
    return "sha256:" + h.hexdigest()


def plain(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def check_tool(tool: Any) -> str:
    if not isinstance(tool, dict):
        raise DigestError("a tool is a JSON object")
    if not isinstance(tool.get("name"), str):
        raise DigestError('a tool has a string "name"')
    return tool["name"]


def sections(tool: Any) -> dict[str, str]:
    """The canonical texts of surface, behavior, permissions and the model view."""
    check_tool(tool)
    surface = {k: v for k, v in tool.items() if k in SURFACE_KEYS}
    behavior = {
        k: v for k, v in tool.items() if k not in SURFACE_KEYS and k != "annotations"
    }
    permissions: dict[str, Any] = dict(HINT_DEFAULTS)
    if "annotations" in tool:
        annotations = tool["annotations"]
        if isinstance(annotations, dict):
            for hint in HINT_DEFAULTS:
                if hint in annotations:
                    permissions[hint] = annotations[hint]
            rest = {k: v for k, v in annotations.items() if k not in HINT_DEFAULTS}
            if rest:
                behavior["annotations"] = rest
        else:
            behavior["annotations"] = annotations
    model_view = {k: v for k, v in tool.items() if k in MODEL_VIEW_KEYS}
    return {
        "surface": canonical(surface),
        "behavior": canonical(behavior),
        "permissions": canonical(permissions),
        "model_view": canonical(model_view),
    }


def economy_canonical(model_view: str, tokens: int) -> str:
    return canonical(
        {
            "bytes": len(model_view.encode("utf-8")),
            "tokenizer": TOKENIZER,
            "tokens": tokens,
        }
    )


def tool_digests(tool: Any, tokens: int | None) -> tuple[dict[str, str], dict[str, str]]:
    """(sections, digests) of a tool; the economy digest only when `tokens` is given."""
    texts = sections(tool)
    digests = {
        "surface": tagged("surface", texts["surface"]),
        "behavior": tagged("behavior", texts["behavior"]),
        "permissions": tagged("permissions", texts["permissions"]),
    }
    if tokens is not None:
        digests["economy"] = tagged("economy", economy_canonical(texts["model_view"], tokens))
    digests["tool"] = tagged(
        "tool",
        canonical(
            {
                "surface": digests["surface"],
                "behavior": digests["behavior"],
                "permissions": digests["permissions"],
            }
        ),
    )
    return texts, digests


def utf8_key(s: str) -> bytes:
    return s.encode("utf-8")


def item_pairs(items: list[Any], kind: str, key_field: str) -> list[list[str]]:
    """[key, digest] of each prompt or resource template, sorted by key (UTF-8 bytes)."""
    pairs = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get(key_field), str):
            raise DigestError(f"a {kind} is an object with a string {key_field!r}")
        pairs.append([item[key_field], tagged(kind, canonical(item))])
    pairs.sort(key=lambda p: utf8_key(p[0]))
    for a, b in zip(pairs, pairs[1:]):
        if a[0] == b[0]:
            raise DigestError(f"duplicate {kind} {a[0]!r}")
    return pairs


def server_canonical(
    tools: list[Any],
    instructions: str | None,
    prompts: list[Any] | None,
    templates: list[Any] | None,
) -> str:
    """The server digest input. None means "not captured" and leaves the key out."""
    pairs = []
    for tool in tools:
        name = check_tool(tool)
        pairs.append([name, tool_digests(tool, None)[1]["tool"]])
    pairs.sort(key=lambda p: utf8_key(p[0]))
    for a, b in zip(pairs, pairs[1:]):
        if a[0] == b[0]:
            raise DigestError(f"duplicate tool name {a[0]!r}")
    obj: dict[str, Any] = {"tools": pairs}
    if instructions is not None:
        obj["instructions"] = tagged("instructions", canonical(instructions))
    if prompts is not None:
        obj["prompts"] = item_pairs(prompts, "prompt", "name")
    if templates is not None:
        obj["resourceTemplates"] = item_pairs(templates, "resource-template", "uriTemplate")
    return canonical(obj)


def catalog_canonical(tools: list[Any]) -> str:
    """The ram-tool-catalog-v1 text: five keys per tool, as received, tools sorted by name."""
    entries = [{k: t[k] for k in CATALOG_KEYS if k in t} for t in tools]
    entries.sort(key=lambda t: utf8_key(t["name"]))
    return canonical({"format": CATALOG_FORMAT, "tools": entries})


# ---------------------------------------------------------------------------------------------
# Self-test against RFC 8785.

RFC8785_NUMBERS = [  # Appendix B: IEEE-754 bits, expected text
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


def self_test() -> list[str]:
    failures = []
    if sys.float_repr_style != "short":
        failures.append("this Python's float repr is not the shortest round-trip form")
    for bits, expected in RFC8785_NUMBERS:
        (x,) = struct.unpack(">d", bytes.fromhex(bits))
        got = es_number(x)
        if got != expected:
            failures.append(f"number 0x{bits}: expected {expected}, computed {got}")
    for bits in ("7fffffffffffffff", "7ff0000000000000"):
        (x,) = struct.unpack(">d", bytes.fromhex(bits))
        try:
            es_number(x)
            failures.append(f"number 0x{bits} (NaN or Infinity) was not rejected")
        except DigestError:
            pass
    # RFC 8785 section 3.2.3: keys sorted by UTF-16 code units.
    sample = parse_json(
        '{"\\u20ac":"Euro Sign","\\r":"Carriage Return","\\ufb33":"Hebrew Letter Dalet With'
        ' Dagesh","1":"One","\\ud83d\\ude00":"Emoji: Grinning Face","\\u0080":"Control",'
        '"\\u00f6":"Latin Small Letter O With Diaeresis"}'
    )
    order = [ord(k[0]) for k in json.loads(canonical(sample))]
    if order != [0x0D, 0x31, 0x80, 0xF6, 0x20AC, 0x1F600, 0xFB33]:
        failures.append(f"RFC 8785 key order example: got {[hex(c) for c in order]}")
    return failures


# ---------------------------------------------------------------------------------------------
# Vector checking.


class Report:
    def __init__(self, name: str):
        self.name = name
        self.mismatches: list[str] = []

    def check(self, field: str, expected: Any, computed: Any) -> None:
        if expected != computed:
            self.mismatches.append(
                f"  {field}:\n    vector:   {json.dumps(expected, ensure_ascii=True)}\n"
                f"    computed: {json.dumps(computed, ensure_ascii=True)}"
            )

    def fail(self, message: str) -> None:
        self.mismatches.append(f"  {message}")


def as_count(value: Any, what: str) -> int:
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    raise DigestError(f"{what} is not a non-negative integer")


def check_tool_vector(vector: dict[str, Any], report: Report) -> dict[str, str]:
    tokens = as_count(vector.get("tokens"), "tokens")
    texts, digests = tool_digests(vector["input"], tokens)
    expected_texts = vector.get("canonical") or {}
    for field in ("surface", "behavior", "permissions", "model_view"):
        report.check(f"canonical.{field}", expected_texts.get(field), texts[field])
    expected_digests = vector.get("digests") or {}
    for field in ("surface", "behavior", "permissions", "economy", "tool"):
        report.check(f"digests.{field}", expected_digests.get(field), digests[field])
    return digests


def check_server_vector(vector: dict[str, Any], report: Report) -> None:
    given = vector["input"]
    expected = vector.get("expected") or {}
    unknown = set(given) - {"initialize", "tools", "prompts", "resourceTemplates"}
    if unknown:
        report.fail(f"input has unknown keys {sorted(unknown)}")
    tools = given["tools"]
    init = given.get("initialize")
    instructions = None
    if isinstance(init, dict) and isinstance(init.get("instructions"), str):
        instructions = init["instructions"]
    prompts = given.get("prompts")
    templates = given.get("resourceTemplates")

    # Per tool: every digest (economy from the vector's token count), sorted by name.
    expected_tools = {t.get("name"): t for t in expected.get("tools", [])}
    names = sorted((check_tool(t) for t in tools), key=utf8_key)
    report.check(
        "tools (names, in order)", [t.get("name") for t in expected.get("tools", [])], names
    )
    for tool in tools:
        name = tool["name"]
        want = expected_tools.get(name)
        if want is None:
            report.fail(f"tool {name!r} has no expected entry")
            continue
        _, digests = tool_digests(tool, as_count(want.get("tokens"), f"tool {name!r} tokens"))
        for field in ("surface", "behavior", "permissions", "economy", "tool"):
            want_digest = want.get("digests", {}).get(field)
            report.check(f"tool {name!r} {field}", want_digest, digests[field])

    if instructions is None:
        if "instructions" in expected:
            report.fail("expected has an instructions digest, the input no instructions")
    else:
        report.check(
            "instructions", expected.get("instructions"),
            tagged("instructions", canonical(instructions)),
        )
    for field, items, kind, key in (
        ("prompts", prompts, "prompt", "name"),
        ("resourceTemplates", templates, "resource-template", "uriTemplate"),
    ):
        if items is None:
            if field in expected:
                report.fail(f"expected has {field}, but the input did not capture them")
        else:
            report.check(field, expected.get(field), item_pairs(items, kind, key))

    text = server_canonical(tools, instructions, prompts, templates)
    report.check("server_canonical", expected.get("server_canonical"), text)
    report.check("server_digest", expected.get("server_digest"), tagged("server", text))
    catalog = catalog_canonical(tools)
    report.check("catalog_canonical", expected.get("catalog_canonical"), catalog)
    report.check("catalog_revision", expected.get("catalog_revision"), plain(catalog))


def vector_paths(paths: list[str]) -> list[str]:
    out = []
    for path in paths:
        if os.path.isdir(path):
            out.extend(
                os.path.join(path, n) for n in sorted(os.listdir(path)) if n.endswith(".json")
            )
        else:
            out.append(path)
    return out


def check_vectors(paths: list[str]) -> int:
    failures = self_test()
    for f in failures:
        print(f"FAIL self-test: {f}")
    files = vector_paths(paths)
    if not files:
        print("FAIL no vectors found")
        return 1
    tool_results: dict[str, tuple[dict[str, Any], dict[str, str]]] = {}
    reports = []
    for path in files:
        name = os.path.basename(path)
        report = Report(name)
        reports.append(report)
        try:
            with open(path, encoding="utf-8") as f:
                vector = parse_json(f.read())
            if name.startswith("server-"):
                check_server_vector(vector, report)
            elif name.startswith("tool-"):
                tool_results[name] = (vector, check_tool_vector(vector, report))
            else:
                report.fail('a vector file name starts with "tool-" or "server-"')
        except (DigestError, KeyError, TypeError, AttributeError) as e:
            report.fail(f"cannot check: {type(e).__name__}: {e}")
    # Relations between tool vectors.
    for report in reports:
        if report.name not in tool_results:
            continue
        vector, digests = tool_results[report.name]
        for relation in ("equal_to", "differs_from"):
            other = vector.get(relation)
            if other is None:
                continue
            if other not in tool_results:
                if os.path.basename(other) in [r.name for r in reports]:
                    report.fail(f"{relation}: {other} could not be checked")
                else:
                    report.fail(f"{relation} names no tool vector {other!r}")
                continue
            theirs = tool_results[other][1]
            if relation == "equal_to" and theirs != digests:
                report.fail(f"digests differ from {other}'s, but equal_to says they are equal")
            if relation == "differs_from" and theirs["tool"] == digests["tool"]:
                report.fail(f"tool digest equals {other}'s, but differs_from says they differ")
    failed = [r for r in reports if r.mismatches]
    for r in reports:
        if r.mismatches:
            print(f"FAIL {r.name}")
            print("\n".join(r.mismatches))
        else:
            print(f"ok   {r.name}")
    print(
        f"{len(reports) - len(failed)} of {len(reports)} vectors agree"
        + (f"; self-test: {len(failures)} failure(s)" if failures else "")
    )
    return 1 if failed or failures else 0


def describe_tool(path: str, tokens: int | None) -> int:
    with open(path, encoding="utf-8") as f:
        tool = parse_json(f.read())
    texts, digests = tool_digests(tool, tokens)
    print(json.dumps({"canonical": texts, "digests": digests}, indent=2, ensure_ascii=False))
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="vector files or directories")
    parser.add_argument("--tool", help="a file holding one tool object")
    parser.add_argument("--tokens", type=int, help="o200k_base tokens of the tool's model view")
    args = parser.parse_args(argv)
    try:
        if args.tool:
            return describe_tool(args.tool, args.tokens)
        if not args.paths:
            parser.error("give vector files or directories, or --tool FILE")
        return check_vectors(args.paths)
    except DigestError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
