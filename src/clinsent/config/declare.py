"""The knob machinery: settings dataclasses <-> config entries, so that a default lives in exactly one place.

A method's (or an evaluation task's) settings are a frozen dataclass. Each field is a config
key (``metadata["key"]`` names it where Python cannot, e.g. ``lambda``); its type gives the
JSON-schema type (``Literal`` gives the allowed values) and ``metadata["schema"]`` adds bounds.
:func:`settings_schema` generates the schema of one entry from the dataclass, and
:func:`build` (the one parser) reads an entry into it; given the entry's place (``where``) it
first checks the entry with messages that name the entry, the key, the allowed keys and the
closest match.

The config's own sections are declared the same way (:mod:`clinsent.config.sections`): a knob
may hold a mapping or a list as its default, keep its default out of the schema
(``unfilled``: a key Snakemake's ``validate`` must not fill in), give its whole JSON schema
where a Python type says too little (``json``), and a settings class may take keys beyond its
own (``OPEN``: an entry whose other keys a registry checks, e.g. a method's knobs), which
:func:`build` gathers in its ``rest`` field, an :class:`Open` mapping the registry types.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeVar, get_args, get_origin

from clinsent.errors import InputError, shown, shown_value, unknown_key
from clinsent.registry import did_you_mean

S = TypeVar("S")


SEED_MAX = 2**32 - 1  # numpy's legacy seeding (seed_everything) takes no larger seed


def knob(
    default: Any,
    doc: str,
    key: str | None = None,
    required: bool = False,
    names: Any = None,
    aliases: Mapping[str, str] | None = None,
    unfilled: bool = False,
    null: bool = True,
    json: Mapping[str, Any] | None = None,
    rest: bool = False,
    **schema: Any,
) -> Any:
    """A settings field: its default, one line of documentation, its config key, whether the
    entry must give it (the default is then a placeholder), the registry whose names are its
    allowed values (a reader's format: the names live in the registry alone, plugins included),
    other names users write for its values (refused, naming the value they mean: ``half`` for
    ``fp16``) and JSON-schema bounds. ``unfilled``: the schema states no default (the key stays
    absent when not given); ``null=False``: a key whose Python type takes None (absent) that the
    config may not write as null; ``json``: the key's JSON schema in full, where the type alone cannot
    say it (``oneOf`` alternatives); ``rest``: the field of an ``OPEN`` class that holds its other
    keys (no key of its own: a method's knobs, an eval set's task keys)."""
    meta: dict[str, Any] = {"doc": doc, "schema": schema, "required": required}
    if rest:
        meta["rest"] = True
    if unfilled:
        meta["unfilled"] = True
    if not null:
        meta["null"] = False
    if json is not None:
        meta["json"] = dict(json)
    if key:
        meta["key"] = key
    if names is not None:
        meta["names"] = names
    if aliases:
        meta["aliases"] = dict(aliases)
    if rest:  # the other keys: none unless given
        return dataclasses.field(default_factory=Open, metadata=meta)
    if isinstance(default, (dict, list)):  # a mutable default: each instance gets its own copy
        meta["default"] = default
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def default_of(f: dataclasses.Field[Any]) -> Any:
    """A field's default (``dataclasses.MISSING`` where it has none)."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if "default" in f.metadata:
        return f.metadata["default"]
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def config_key(f: dataclasses.Field[Any]) -> str:
    return str(f.metadata.get("key", f.name))


def declared(cls: Any) -> list[dataclasses.Field[Any]]:
    """A settings class's fields that are config keys (all but an ``OPEN`` class's ``rest``)."""
    return [f for f in dataclasses.fields(cls) if not f.metadata.get("rest")]


def _rest(cls: Any) -> dataclasses.Field[Any] | None:
    return next((f for f in dataclasses.fields(cls) if f.metadata.get("rest")), None)


def keys(cls: type) -> list[str]:
    return [config_key(f) for f in declared(cls)]


def given(section: Any) -> tuple[str, ...]:
    """The keys the mapping a section was built from gave (where a key given as null means
    other than one left out: a method's ``selection_set``)."""
    return tuple(getattr(section, "_given_order", ()))


class Open(Mapping[str, Any]):
    """An ``OPEN`` entry's keys beyond its declared ones, as given, read-only: a method's knobs, an
    eval set's task keys, a table's or figure's kind keys, the shared ``training`` and
    ``evaluation`` values. The config layer declares where they go, not what they are: the
    registry that types them (:mod:`clinsent.methods`, :mod:`clinsent.tasks`, the report's kinds)
    sits above it and may be a plugin's, imported only once the config names it (``plugins``);
    it parses them into its settings dataclass with messages naming the entry and the key."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values = dict(values or {})

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Any:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Open({self._values!r})"


def _type_schema(tp: Any, optional_keys: bool = False) -> dict[str, Any]:
    """The JSON schema of one field type: simple types, ``Literal`` (an enum), lists and tuples,
    ``dict[str, X]`` (an object of X), a settings dataclass (a nested entry, e.g. a table's row)
    and unions of these."""
    origin = get_origin(tp)
    if origin is Literal:
        return {"enum": list(get_args(tp))}
    if origin in (typing.Union, types.UnionType):
        parts = [_type_schema(a, optional_keys) for a in get_args(tp)]
        if any(set(p) - {"type", "enum"} for p in parts):  # a list, an object or a nested entry among them
            merged = _merged(parts)
            return merged if merged is not None else {"anyOf": parts}
        enums = [v for p in parts for v in p.get("enum", [])]
        types_ = [t for p in parts for t in ([p["type"]] if isinstance(p.get("type"), str) else p.get("type", []))]
        out: dict[str, Any] = {}
        typed = [t for t in types_ if t != "null"]
        if enums and typed == ["boolean"]:  # bool | Literal["auto"]: every value listed
            out["enum"] = [True, False, *enums, *([None] if "null" in types_ else [])]
        elif enums and typed:  # a type beside named values (str | Literal[...]): either
            return {"anyOf": [{"type": types_}, {"enum": enums}]}
        elif enums:
            out["enum"] = enums + ([None] if "null" in types_ else [])
        elif types_:
            out["type"] = types_
        return out
    simple = {bool: "boolean", int: "integer", float: "number", str: "string", type(None): "null"}
    if tp in simple:
        return {"type": simple[tp]}
    if origin in (list, tuple):
        return {"type": "array", "items": _type_schema(get_args(tp)[0], optional_keys)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(get_args(tp)[1], optional_keys)}
    if tp is Any:
        return {}
    if dataclasses.is_dataclass(tp):
        return settings_schema(tp, optional_keys)  # type: ignore[arg-type]
    raise TypeError(f"settings field type {tp!r} has no JSON-schema mapping")


def _field_schema(f: dataclasses.Field[Any], tp: Any, optional_keys: bool) -> dict[str, Any]:
    """A field's JSON schema before its bounds: given whole (``json``) or its type's."""
    if "json" in f.metadata:
        return dict(f.metadata["json"])
    return _type_schema(tp, optional_keys)


def _merged(parts: list[dict[str, Any]]) -> dict[str, Any] | None:
    """One schema for a union whose parts are of distinct JSON types (``str | list[str]``: a type
    list with the list's ``items``), or None where they cannot merge (two objects, an enum)."""
    types_: list[str] = []
    out: dict[str, Any] = {}
    for part in parts:
        if not isinstance(part.get("type"), str) or part["type"] in types_ or "enum" in part:
            return None
        types_.append(part["type"])
        for key, value in part.items():
            if key != "type":
                if key in out and out[key] != value:
                    return None
                out[key] = value
    return {"type": types_, **out}


def _json(value: Any) -> Any:
    """A default as JSON holds it (tuples as lists, a nested section as ``{}``: its own keys'
    defaults are filled in as the entry is validated), so an entry filled with it reads as written."""
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    if dataclasses.is_dataclass(value):
        return {}
    if isinstance(value, Mapping):
        return {k: _json(v) for k, v in value.items()}
    return value


def _not_null(prop: dict[str, Any]) -> dict[str, Any]:
    """``prop`` without null among its types or values."""
    out = dict(prop)
    if isinstance(out.get("type"), list):
        kept = [t for t in out["type"] if t != "null"]
        out["type"] = kept[0] if len(kept) == 1 else kept
    if "enum" in out:
        out["enum"] = [v for v in out["enum"] if v is not None]
    if "anyOf" in out:
        out["anyOf"] = [p for p in out["anyOf"] if p != {"type": "null"}]
    return out


def settings_schema(cls: type, optional_keys: bool = False) -> dict[str, Any]:
    """The JSON schema of one config entry holding these settings (no extra keys allowed).
    ``optional_keys``: a knob whose default is None is a key the entry may leave out (no default
    is filled in for it and null is refused: a table's or figure's optional key, read with
    ``entry.get``; a knob whose own schema says ``type=[..., "null"]`` takes null too)."""
    hints = typing.get_type_hints(cls)
    props = {}
    for f in declared(cls):
        default = default_of(f)
        prop = _field_schema(f, hints[f.name], optional_keys)
        if (optional_keys and default is None) or f.metadata.get("null") is False:
            prop = _not_null(prop)  # an optional key is left out, not written as null
        prop.update(f.metadata.get("schema", {}))
        if "names" in f.metadata:
            prop["enum"] = f.metadata["names"].names()
        if "doc" in f.metadata:
            prop["description"] = f.metadata["doc"]
        if default is not dataclasses.MISSING and not f.metadata.get("required") and not f.metadata.get("unfilled"):
            if not (optional_keys and default is None):
                prop["default"] = _json(default)
        props[config_key(f)] = prop
    required = [config_key(f) for f in declared(cls) if f.metadata.get("required")]
    out: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": props, "required": required}
    if getattr(cls, "OPEN", False):  # its other keys are a registry's to check
        del out["additionalProperties"]
    return out


@functools.cache
def _checks(cls: type) -> tuple[dict[str, Any], dict[str, Any]]:
    """One settings class's schema and type hints, built once per process: a plan resolves
    every method, task and kind entry of a config (116 entries for the MED-SE grid)."""
    return settings_schema(cls), typing.get_type_hints(cls)


def _check_entry(cls: type, values: Mapping[str, Any], where: str, foreign: Mapping[str, str] | None) -> None:
    """A config entry against ``cls``'s declarations (:func:`build` with ``where``): unknown keys
    (``foreign`` maps another kind's keys, another objective's knobs, to their owner, so the
    message says where the key belongs), required keys, a value's alias, the schema's bounds."""
    import jsonschema

    allowed = keys(cls)
    for key in values:
        if key not in allowed:
            owner = (foreign or {}).get(key)
            problem = (
                f"{shown(key)} is a knob of {owner}, not of this one{did_you_mean(key, allowed)}"
                if owner
                else f"{unknown_key(key)}{did_you_mean(key, allowed)}"
            )
            raise InputError(where, problem, f"remove it or use one of the allowed keys: {', '.join(sorted(allowed))}")
    required = [config_key(f) for f in declared(cls) if f.metadata.get("required")]
    lacking = [k for k in required if k not in values]
    if lacking:
        raise InputError(where, f"missing required key(s) {lacking}", f"add {', '.join(lacking)} to the entry")
    schema, _ = _checks(cls)
    by_key = {config_key(f): f for f in declared(cls)}
    for key, value in values.items():
        aliases = by_key[key].metadata.get("aliases", {})
        if isinstance(value, (str, int)) and str(value).lower() in aliases:
            meant = aliases[str(value).lower()]
            allowed_values = schema["properties"][key].get("enum", [])
            raise InputError(
                f"{where}.{key}",
                f"{value!r} is not one of the allowed values {allowed_values} ({value!r} means {meant})",
                f"write {key}: {meant}",
            )
        prop = schema["properties"][key]
        floats_for_integers(value, prop, f"{where}.{key}")
        errors = list(jsonschema.Draft202012Validator(prop).iter_errors(value))
        if errors:
            message = errors[0].message if shown_value(value) == repr(value) else "not valid here"
            raise InputError(
                f"{where}.{key}",
                f"{shown_value(value)} is not valid: {message}",
                f"give a value that fits {_describe(schema['properties'][key])}",
            )


def integer_only(prop: Mapping[str, Any]) -> bool:
    """Whether a JSON-schema property takes integers but no other numbers: JSON Schema counts
    ``4.0`` as an integer, Python does not (``range(4.0)``), so such a value is refused."""
    types_ = prop.get("type")
    names = [types_] if isinstance(types_, str) else list(types_ or [])
    return "integer" in names and "number" not in names


def check_finite(value: Any, where: str = "config") -> None:
    """Stop at the first number that is not finite (``.nan``, ``.inf`` in YAML, ``nan`` through
    ``--config``), anywhere in a config, naming its key: JSON Schema's bounds let NaN through
    (every comparison with it is false) and no knob means infinity. Walks mappings and lists."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(
            where,
            f"{value!r} is not a finite number",
            "give a number within the range the key's description states (config/README.md)",
        )
    if isinstance(value, Mapping):
        for key, item in value.items():
            check_finite(item, f"{where}.{key}" if where != "config" else f"config: {key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_finite(item, f"{where}[{i}]")


def number_flag(cls: type, name: str) -> Any:
    """The ``type=`` of a command's flag that sets the knob ``name`` of ``cls`` (declared once):
    its Python type (int or float), finite, within its declared bounds (``minimum``,
    ``maximum``, their exclusive forms); anything else is argparse's one-line refusal, exit 2."""
    import argparse

    field = next(f for f in declared(cls) if f.name == name)
    hint = typing.get_type_hints(cls)[name]
    kind = int if hint is int or int in get_args(hint) and float not in get_args(hint) else float
    bounds = field.metadata.get("schema", {})

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'a whole' if kind is int else 'a'} number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text} is not a finite number")
        broken = [
            f"{word} {limit}"
            for key, word, bad in (
                ("minimum", "at least", lambda v, b: v < b),
                ("maximum", "at most", lambda v, b: v > b),
                ("exclusiveMinimum", "above", lambda v, b: v <= b),
                ("exclusiveMaximum", "below", lambda v, b: v >= b),
            )
            if (limit := bounds.get(key)) is not None and bad(value, limit)
        ]
        if broken:
            raise argparse.ArgumentTypeError(f"{text} is out of range: it must be {' and '.join(broken)}")
        return value

    return parse


def floats_for_integers(value: Any, schema: Mapping[str, Any], where: str = "config") -> None:
    """Stop at the first float (``4.0``) where ``schema`` takes integers only, naming its key: the
    strictness JSON Schema lacks (see :func:`integer_only`); walks properties, additional
    properties and array items."""
    if isinstance(value, float) and not isinstance(value, bool) and integer_only(schema):
        raise InputError(
            where,
            f"{value!r} is not an integer (JSON Schema takes {value!r} for a whole number; the jobs would not)",
            f"write {int(value)}" if value.is_integer() else "give a whole number",
        )
    if isinstance(value, Mapping):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra if isinstance(extra, Mapping) else None)
            if sub is not None:
                floats_for_integers(item, sub, f"{where}.{key}" if where != "config" else f"config: {key}")
    elif isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            floats_for_integers(item, schema["items"], f"{where}[{i}]")


def _describe(prop: dict[str, Any]) -> str:
    shown = {k: v for k, v in prop.items() if k not in ("description", "default")}
    return ", ".join(f"{k} {v}" for k, v in shown.items())


def key_owners(settings_classes: Mapping[str, type]) -> dict[str, list[str]]:
    """Config key -> the registered names (objectives, tasks) whose settings have it."""
    owners: dict[str, list[str]] = {}
    for name, cls in sorted(settings_classes.items()):
        for key in keys(cls):
            owners.setdefault(key, []).append(name)
    return owners


def foreign_keys(own: type, owners: Mapping[str, list[str]], kind: str) -> dict[str, str]:
    """Keys of other kinds' settings that ``own`` lacks -> who has them (for error messages)."""
    mine = set(keys(own))
    return {k: f"{kind} " + " / ".join(v) for k, v in owners.items() if k not in mine}


def check_shared(block: Mapping[str, Any], where: str, known: Iterable[str], extra: tuple[str, ...] = ()) -> None:
    """Every key of a shared block (``training``, ``evaluation``) must be some registered knob."""
    allowed = sorted({*known, *extra})
    for key in block:
        if key not in allowed:
            raise InputError(
                f"config: {where}",
                f"{unknown_key(key)}{did_you_mean(key, allowed)}",
                f"use one of {', '.join(allowed)}",
            )


def build(
    cls: type[S], values: Mapping[str, Any] | None, where: str | None = None, foreign: Mapping[str, str] | None = None
) -> S:
    """A mapping as its dataclass, the one parser of every declared section and entry.

    Without ``where``: a mapping already checked, a config section (the schema checked it at the
    door) or a job's params read back (:func:`to_params` wrote them); the result keeps the
    mapping's key order, which :func:`to_params` gives back (a param's text). With ``where`` (a
    registry's entry read the first time: a method's knobs, a task's keys, a fine-tune entry's
    options): the entry is checked first, naming ``where`` (unknown keys, ``foreign`` naming the
    kind another kind's key belongs to; required keys; aliases; the schema's bounds), a whole
    number given for a float becomes a float, and the keys take the declaration's order (the same
    params whatever order the config wrote them in).

    Nested sections and entries are built the same way, lists of a tuple type become tuples, a
    key not given takes its declared default (None where it declares none); an ``OPEN`` class's
    other keys go to its ``rest`` field as given."""
    if where is not None:
        _check_entry(cls, values or {}, where, foreign)
    hints = _checks(cls)[1] if where is not None else typing.get_type_hints(cls)  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {}
    for f in declared(cls):
        key = config_key(f)
        if values is not None and key in values:
            value = values[key]
            if where is not None and hints[f.name] is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            kwargs[f.name] = _built(hints[f.name], value)
        elif default_of(f) is dataclasses.MISSING:
            kwargs[f.name] = None
    rest = _rest(cls)
    if rest is not None:
        own = set(keys(cls))
        kwargs[rest.name] = Open({k: v for k, v in (values or {}).items() if k not in own})
    built = cls(**kwargs)
    if values is not None and where is None:  # the mapping's own key order (a param's repr)
        object.__setattr__(built, "_given_order", tuple(values))
    return built


def _built(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        for arg in get_args(tp):
            if isinstance(value, Mapping) and (dataclasses.is_dataclass(arg) or get_origin(arg) is dict):
                return _built(arg, value)
            if isinstance(value, list) and get_origin(arg) is tuple:
                return tuple(value)
        return value
    if dataclasses.is_dataclass(tp):
        return build(tp, value) if isinstance(value, Mapping) else value  # type: ignore[arg-type]
    if origin is dict and isinstance(value, Mapping):
        inner = get_args(tp)[1]
        if not _holds_sections(inner):  # names to plain values (base_models)
            return value
        return {k: _built(inner, v) for k, v in value.items()}
    if origin is tuple and isinstance(value, list):
        return tuple(value)
    return value


def _holds_sections(tp: Any) -> bool:
    """Whether a declared type holds a settings dataclass anywhere (a section or an entry to build)."""
    return dataclasses.is_dataclass(tp) or any(_holds_sections(a) for a in get_args(tp))


def to_params(section: Any) -> dict[str, Any]:
    """A typed section, entry or settings as the mapping it was built from (:func:`build` reads
    it back): what crosses into a job's params, the same two functions for every rule and every
    kind of entry (a config section, a method's, a task's, a fine-tune entry's settings). Nested
    sections become mappings; a key the schema leaves unfilled that was not given stays absent
    (one given as null stays null);
    the keys in the order of the mapping the section was built from (declaration order after
    it); a tuple stays a tuple (a param's text is what Snakemake compares)."""
    out: dict[str, Any] = {}
    for f in declared(section):
        value = getattr(section, f.name)
        if value is None and f.metadata.get("unfilled") and config_key(f) not in given(section):
            continue
        out[config_key(f)] = _plain(value)
    rest = _rest(section)
    if rest is not None:  # an OPEN entry's other keys, beside its own as given
        out.update({k: _plain(v) for k, v in getattr(section, rest.name).items()})
    # keys in the order of the mapping it was built from (Snakemake compares a param by its repr:
    # the same entry must give the same text, so reading the config typed reruns no job)
    order = {k: i for i, k in enumerate(getattr(section, "_given_order", ()))}
    return dict(sorted(out.items(), key=lambda kv: order.get(kv[0], len(order))))


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_params(value)
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
