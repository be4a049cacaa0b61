"""The generated parts of ``config/README.md``, written from the registries so they cannot drift.

Each generated part sits between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``
in the README; the prose around them is written by hand. ``python -m clinsent.generate.reference`` rewrites
them in place, ``--check`` exits 1 when the file differs from what it would write (a test runs it).
Parts: ``keys`` (every key of the workflow's own sections, from their declarations in
:mod:`clinsent.config.sections`), ``kinds`` (every table and figure kind: what it shows, its keys,
their defaults), ``methods`` (each objective's knobs), ``tasks`` (each evaluation task's keys and
metrics), ``formats`` (every input format's registry and names) and ``finetune`` (the fine-tune
entries' keys).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from typing import Any

from clinsent.repository import CONFIG_README

README = CONFIG_README


_WORDS = ("true", "false", "null")  # a string that reads as a JSON word is shown quoted


def _type(spec: dict[str, Any]) -> str:
    if "enum" in spec:
        return " \\| ".join(
            f"`{v if isinstance(v, str) and v not in _WORDS else json.dumps(v)}`" for v in spec["enum"]
        )
    if "const" in spec:
        return f"`{spec['const']}`"
    for alternatives in ("oneOf", "anyOf"):
        if alternatives in spec:
            return " or ".join(_type(s) for s in spec[alternatives])
    kind = spec.get("type", "")
    kinds = kind if isinstance(kind, list) else [kind]
    null = " or null" if "null" in kinds else ""
    others = " or ".join(str(k) for k in kinds if k not in ("array", "null", ""))
    others = f"{others} or " if others else ""
    if "array" in kinds and isinstance(spec.get("items"), dict) and spec["items"].get("type") == "object":
        fields = spec["items"].get("properties") or {}
        required = set(spec["items"].get("required") or [])
        return others + "list of {" + ", ".join(f"{k}{'' if k in required else '?'}" for k in fields) + "}" + null
    if "array" in kinds and isinstance(spec.get("items"), dict):
        return f"{others}list of {_type(spec['items'])}{null}"
    return " or ".join(str(k) for k in kinds if k)


def _default(name: str, spec: dict[str, Any], required: tuple[str, ...]) -> str:
    if name in required:
        return "— (required)"
    if "default" in spec:
        return f"`{json.dumps(spec['default'])}`"
    return "—"


def _summary(doc: str | None) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join((doc or "").strip().split("\n\n")[0].split())


def kinds_markdown() -> str:
    from clinsent.report.kinds import FIGURE_KINDS, TABLE_KINDS
    from clinsent.report.kinds.base import COMMON, DEFAULT_FIGURE, DEFAULT_TABLE

    lines = [
        "Every table and figure has `caption` (required) and `kind`; the kind's own keys follow. A key",
        "of another kind, or a misspelt one, stops the dry run naming the key and the closest match.",
        "",
    ]
    for section, registry, default in (
        ("tables", TABLE_KINDS, DEFAULT_TABLE),
        ("figures", FIGURE_KINDS, DEFAULT_FIGURE),
    ):
        for name in registry.names():
            cls = registry.get(name)
            module = sys.modules[cls.__module__]
            title = f"#### `{section}.<id>.kind: {name}`" + (" (the default)" if name == default else "")
            lines += [title, "", _summary(module.__doc__), ""]
            own = cls.keys()
            keys = {k: v for k, v in own["properties"].items() if k not in COMMON}
            if not keys:
                lines += ["No keys of its own.", ""]
                continue
            lines += ["| key | default | type | meaning |", "|---|---|---|---|"]
            for key, spec in keys.items():
                lines.append(
                    f"| `{key}` | {_default(key, spec, tuple(own['required']))} | {_type(spec)} | "
                    f"{spec.get('description', '')} |"
                )
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _settings_table(cls: type, skip: tuple[str, ...] = ()) -> list[str]:
    """key | default | type | meaning, one row per knob of a settings dataclass (its own docs)."""
    from clinsent.config.declare import settings_schema

    schema = settings_schema(cls)
    required = tuple(schema["required"])
    lines = ["| key | default | type | meaning |", "|---|---|---|---|"]
    for key, spec in schema["properties"].items():
        if key not in skip:
            lines.append(
                f"| `{key}` | {_default(key, spec, required)} | {_type(spec)} | {spec.get('description', '')} |"
            )
    return lines + [""]


def _entry_classes(tp: Any) -> tuple[type | None, type | None]:
    """(a nested section's class, a mapping of entries' class) a declared type holds, if any."""
    import dataclasses
    import typing

    for arg in (tp, *typing.get_args(tp)):
        if dataclasses.is_dataclass(arg):
            return arg, None  # type: ignore[return-value]
        if typing.get_origin(arg) is dict:
            value = typing.get_args(arg)[1]
            for inner in (value, *typing.get_args(value)):
                if dataclasses.is_dataclass(inner):
                    return None, inner  # type: ignore[return-value]
    return None, None


def _key_rows(cls: type, prefix: str) -> list[str]:
    """One row per key of a declared section, its nested sections and entries walked in order."""
    import typing

    from clinsent.config.declare import config_key, declared, settings_schema

    schema = settings_schema(cls)
    hints = typing.get_type_hints(cls)
    required = tuple(schema["required"])
    rows = []
    for f in declared(cls):
        key = config_key(f)
        spec = schema["properties"][key]
        path = f"{prefix}{key}"
        section, entry = _entry_classes(hints[f.name])
        doc = spec.get("description", "") or _summary((section or entry or cls).__doc__ if section or entry else "")
        if doc.startswith("``"):  # a class's doc starts with its path: the meaning follows
            doc = doc.split(": ", 1)[-1] if ": " in doc else ""
        if section is not None:
            if doc:
                rows.append(f"| `{path}` | {_default(key, spec, required)} | section | {doc} |")
            rows += _key_rows(section, f"{path}.")
        elif entry is not None:
            name = "<id>" if key in ("tables", "figures") else "<name>"
            rows.append(f"| `{path}.{name}` | {_default(key, spec, required)} | entry | {doc} |")
            rows += _key_rows(entry, f"{path}.{name}.")
        else:
            rows.append(f"| `{path}` | {_default(key, spec, required)} | {_type(spec)} | {doc} |")
    other = getattr(cls, "OPEN", "")
    if other:
        rows.append(f"| `{prefix}<key>` | — | | {other} |")
    return rows


def keys_markdown() -> str:
    from clinsent.config.sections import RunConfig

    lines = [
        "Every key of the workflow's own sections, generated from their declarations",
        "(`src/clinsent/config/sections.py`, which `config/schema.yaml` is generated from too).",
        "",
        "| key | default | type | meaning |",
        "|---|---|---|---|",
        *_key_rows(RunConfig, ""),
    ]
    return "\n".join(lines) + "\n"


def _registry_markdown(intro: list[str], registry: Any, title: str, extra: Callable[[Any], list[str]]) -> str:
    """One section per registered entry: its title, its module's summary, ``extra(cls)`` and the
    table of its settings' keys (the objectives' and the tasks' generated parts)."""
    lines = [*intro, ""]
    for name in registry.names():
        cls = registry.get(name)
        lines += [title.format(name), "", _summary(sys.modules[cls.__module__].__doc__), "", *extra(cls)]
        lines += _settings_table(cls.settings_class)
    return "\n".join(lines).rstrip() + "\n"


def methods_markdown() -> str:
    from clinsent.methods import METHODS

    def logged(cls: Any) -> list[str]:
        stats = cls(cls.settings_class()).curve_statistics()  # with its defaults
        if not stats:
            return []
        columns = ", ".join(f"`stat_{n}`" for n in stats)
        return [f"Logs at each eval step (training-curve columns, a `curve_column` figure plots them): {columns}.", ""]

    intro = [
        "Each objective's knobs as its settings dataclass declares them (`methods.<name>.<key>`; a shared",
        "value may sit in `training`). Generated from `clinsent.methods`; the explanations follow below.",
    ]
    return _registry_markdown(intro, METHODS, "#### `objective: {}`", logged)


def tasks_markdown() -> str:
    from clinsent.tasks import TASKS

    def metrics(cls: Any) -> list[str]:
        names = ", ".join(f"`{m}`" for m in cls.metrics)
        headline = f"headline `{cls.headline}`." if cls.headline else "headline: the `headline` key."
        return [f"Metrics: {names}; {headline}", ""]

    intro = [
        "Each evaluation task's keys (`eval_sets.<name>.<key>`, beside `task`, `curve`, `evaluate`,",
        "`base_models`, `embed_from` and `text_shareable`) and its metrics. Generated from `clinsent.tasks`.",
    ]
    return _registry_markdown(intro, TASKS, "#### `task: {}`", metrics)


def formats_markdown() -> str:
    from clinsent.io.reading import READER_KINDS, every_reader

    readers = every_reader()
    lines = [
        "Every file the tool reads goes through one registered reader of one index",
        "(`clinsent.io.reading.READER_KINDS`: a kind of file, then its formats; a plugin adds one with",
        '`@REGISTRY.register("name", check=...)`). The dry run checks every configured input: the',
        "header and first block through the reader's check, or, for eval sets, the whole file. Generated.",
        "",
        "| kind | config key | registry | formats | at dry run |",
        "|---|---|---|---|---|",
    ]
    for kind, registry in sorted(READER_KINDS.items()):
        names = ", ".join(f"`{n}`" for k, n, _ in readers if k == kind)
        when = "read in full" if registry.read_in_full else "header and first block"
        lines.append(f"| {kind} | `{registry.config_key}` | `{_registry_name(registry)}` | {names} | {when} |")
    return "\n".join(lines) + "\n"


def _registry_name(registry: Any) -> str:
    """module.NAME of a registry object, in the module that made it."""
    module = sys.modules[registry.module]
    return next(f"{registry.module}.{a}" for a, v in vars(module).items() if v is registry)


def finetune_markdown() -> str:
    from clinsent.finetune.config import FinetuneSettings

    lines = ["`finetune.<name>.<key>`, generated from `clinsent.finetune.config.FinetuneSettings`.", ""]
    return "\n".join(lines + _settings_table(FinetuneSettings)).rstrip() + "\n"


PARTS: dict[str, Callable[[], str]] = {
    "keys": keys_markdown,
    "kinds": kinds_markdown,
    "methods": methods_markdown,
    "tasks": tasks_markdown,
    "formats": formats_markdown,
    "finetune": finetune_markdown,
}


def render(text: str) -> str:
    """``text`` with every generated part rewritten."""
    for name, make in PARTS.items():
        pattern = re.compile(rf"(<!-- generated: {name} -->\n).*?(<!-- end generated: {name} -->)", re.S)
        if not pattern.search(text):
            raise ValueError(f"{README}: no '<!-- generated: {name} -->' ... '<!-- end generated: {name} -->' block")
        text = pattern.sub(_between_markers(make()), text)
    return text


def _between_markers(part: str) -> Callable[[re.Match[str]], str]:
    """A substitution keeping a generated block's two markers around ``part``."""
    return lambda m: m.group(1) + part + m.group(2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clinsent.generate.reference", description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if config/README.md is not what would be written")
    args = parser.parse_args(argv)
    from clinsent.generate.schema import write_or_check

    wanted = render(README.read_text(encoding="utf-8"))
    return write_or_check(README, wanted, args.check, "python -m clinsent.generate.reference")


if __name__ == "__main__":
    raise SystemExit(main())
