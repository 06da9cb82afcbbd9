"""A task's output checked against its `returns` (JSON Schema) before it is stored, as braid's TypeScript worker does.

The keywords braid's definitions use are checked: type, enum, const, properties, required, additionalProperties,
items, prefixItems, min/maxItems, uniqueItems, min/maxLength, pattern, minimum, maximum, exclusiveMinimum,
exclusiveMaximum, multipleOf, min/maxProperties, allOf, anyOf, oneOf, not, and local $ref. `format` and
annotations are not assertions.
"""

import json
from typing import Any

from . import linear_re

SEALED_PREFIX = "braid:enc:v1:"
_MAX_PROBLEMS = 5


def problems(schema: Any, value: Any) -> list[str]:
    """What makes `value` break `schema` (at most a few), each as "PATH: what"; empty when it matches."""
    out: list[str] = []
    _check(schema, value, "", schema, out)
    return out[:_MAX_PROBLEMS]


def _type_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "integer" if v.is_integer() else "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def _is(v: Any, t: str) -> bool:
    actual = _type_of(v)
    return actual == t or (t == "number" and actual == "integer")


def _equal(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _resolve(root: Any, ref: str) -> Any:
    if not ref.startswith("#"):
        return {}
    node = root
    for part in [p for p in ref[1:].split("/") if p]:
        node = node.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(node, dict) else {}
    return node


def _check(s: Any, v: Any, path: str, root: Any, out: list[str]) -> None:
    if s is True or s is None:
        return
    if s is False:
        out.append(f"{path or '/'}: no value is allowed here")
        return
    if not isinstance(s, dict) or len(out) >= _MAX_PROBLEMS:
        return
    at = path or "/"
    if "$ref" in s:
        _check(_resolve(root, s["$ref"]), v, path, root, out)
    t = s.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        if not any(_is(v, x) for x in types):
            out.append(f"{at}: must be {' or '.join(types)}, is {_type_of(v)}")
            return
    if "enum" in s and not any(_equal(v, e) for e in s["enum"]):
        out.append(f"{at}: must be one of {json.dumps(s['enum'])}")
    if "const" in s and not _equal(v, s["const"]):
        out.append(f"{at}: must be {json.dumps(s['const'])}")
    if _is(v, "number"):
        _number(s, v, at, out)
    if isinstance(v, str):
        _string(s, v, at, out)
    if isinstance(v, list):
        _array(s, v, path, root, out)
    if isinstance(v, dict):
        _object(s, v, path, root, out)
    for sub in s.get("allOf", []):
        _check(sub, v, path, root, out)
    if "anyOf" in s and not any(not problems_at(x, v, root) for x in s["anyOf"]):
        out.append(f"{at}: must match one of anyOf")
    if "oneOf" in s and sum(1 for x in s["oneOf"] if not problems_at(x, v, root)) != 1:
        out.append(f"{at}: must match exactly one of oneOf")
    if "not" in s and not problems_at(s["not"], v, root):
        out.append(f"{at}: must not match `not`")


def problems_at(schema: Any, value: Any, root: Any) -> list[str]:
    out: list[str] = []
    _check(schema, value, "", root, out)
    return out


def _number(s: dict[str, Any], v: float, at: str, out: list[str]) -> None:
    if "minimum" in s and v < s["minimum"]:
        out.append(f"{at}: must be >= {s['minimum']}")
    if "maximum" in s and v > s["maximum"]:
        out.append(f"{at}: must be <= {s['maximum']}")
    if "exclusiveMinimum" in s and v <= s["exclusiveMinimum"]:
        out.append(f"{at}: must be > {s['exclusiveMinimum']}")
    if "exclusiveMaximum" in s and v >= s["exclusiveMaximum"]:
        out.append(f"{at}: must be < {s['exclusiveMaximum']}")
    if "multipleOf" in s and s["multipleOf"] and (v / s["multipleOf"]) % 1 != 0:
        out.append(f"{at}: must be a multiple of {s['multipleOf']}")


def _string(s: dict[str, Any], v: str, at: str, out: list[str]) -> None:
    # JSON Schema counts code points, as Python's len does
    if "minLength" in s and len(v) < s["minLength"]:
        out.append(f"{at}: must have at least {s['minLength']} characters")
    if "maxLength" in s and len(v) > s["maxLength"]:
        out.append(f"{at}: must have at most {s['maxLength']} characters")
    if "pattern" in s:
        # in linear time, as braid's TypeScript side checks it: a backtracking `re` can take minutes on thirty characters
        try:
            if not linear_re.search(s["pattern"], v):
                out.append(f"{at}: must match /{s['pattern']}/")
        except linear_re.PatternError as e:
            out.append(f"{at}: cannot be checked: {e}")


def _array(s: dict[str, Any], v: list[Any], path: str, root: Any, out: list[str]) -> None:
    at = path or "/"
    if "minItems" in s and len(v) < s["minItems"]:
        out.append(f"{at}: must have at least {s['minItems']} items")
    if "maxItems" in s and len(v) > s["maxItems"]:
        out.append(f"{at}: must have at most {s['maxItems']} items")
    if s.get("uniqueItems") and len({json.dumps(x, sort_keys=True) for x in v}) != len(v):
        out.append(f"{at}: must not hold the same item twice")
    prefix = s.get("prefixItems", [])
    for i, item in enumerate(v):
        sub = prefix[i] if i < len(prefix) else s.get("items")
        if sub is not None:
            _check(sub, item, f"{path}/{i}", root, out)


def _object(s: dict[str, Any], v: dict[str, Any], path: str, root: Any, out: list[str]) -> None:
    at = path or "/"
    for key in s.get("required", []):
        if key not in v:
            out.append(f"{at}: must have required property {json.dumps(key)}")
    if "minProperties" in s and len(v) < s["minProperties"]:
        out.append(f"{at}: must have at least {s['minProperties']} properties")
    if "maxProperties" in s and len(v) > s["maxProperties"]:
        out.append(f"{at}: must have at most {s['maxProperties']} properties")
    props = s.get("properties", {})
    extra = s.get("additionalProperties", True)
    for key, item in v.items():
        child = f"{path}/{key.replace('~', '~0').replace('/', '~1')}"
        if key in props:
            _check(props[key], item, child, root, out)
        elif extra is False:
            out.append(f"{at}: must not have property {json.dumps(key)}")
        elif isinstance(extra, dict):
            _check(extra, item, child, root, out)


def sealed(value: Any) -> bool:
    """Whether a value holds a sealed (encrypted) field, which this worker cannot open."""
    if isinstance(value, str):
        return value.startswith(SEALED_PREFIX)
    if isinstance(value, list):
        return any(sealed(x) for x in value)
    if isinstance(value, dict):
        return any(sealed(x) for x in value.values())
    return False
