"""A torchtitan job config checked against the ``JobConfig`` of the installed torchtitan release.

torchtitan 0.2.2 (the last release with TOML job configs) cannot be imported here: its package imports
``triton`` and ``tokenizers`` at import time, and torch's CPU build has no triton. What its
``ConfigManager`` does with a TOML file is nonetheless plain: ``tomllib`` loads it, and
``_dict_to_dataclass`` refuses every key that is not a field of the section's dataclass, before tyro
checks the values' types. This module reads those dataclasses (field names, annotations and the choices
of ``Literal`` fields) from ``torchtitan/config/job_config.py`` of the installed release with :mod:`ast`,
without executing it, and applies the same checks: sections that are fields of ``JobConfig``, keys that
are fields of their section, values of the annotated type (``int``, ``float``, ``bool``, ``str``, a
``Literal`` choice, or None where allowed). The torchtitan release is found with
:func:`importlib.util.find_spec`, which does not run the package.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
from pathlib import Path

#: ``JobConfig``'s source inside the torchtitan package.
JOB_CONFIG_FILE = Path("config") / "job_config.py"


def installed_job_config() -> tuple[str, Path] | None:
    """(version, path of ``job_config.py``) of the installed torchtitan, or None when it is not installed."""
    try:
        spec = importlib.util.find_spec("torchtitan")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / JOB_CONFIG_FILE
    if not path.is_file():
        return None
    try:
        version = importlib.metadata.version("torchtitan")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return version, path


def dataclass_fields(source: str) -> dict[str, dict[str, ast.expr]]:
    """Per class defined at module level in ``source``: its annotated fields and their annotations."""
    classes: dict[str, dict[str, ast.expr]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef):
            classes[node.name] = {
                item.target.id: item.annotation
                for item in node.body
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
            }
    return classes


def _accepts(annotation: ast.expr, value: object) -> bool:
    """Whether a TOML value fits a field's annotation (the types a job config's fields use)."""
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):  # X | Y
        return _accepts(annotation.left, value) or _accepts(annotation.right, value)
    if isinstance(annotation, ast.Constant) and annotation.value is None:
        return value is None
    if isinstance(annotation, ast.Name):
        kinds: dict[str, tuple[type, ...]] = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,)}
        if annotation.id not in kinds:
            return True  # a nested type this check does not model: left to torchtitan
        if annotation.id in ("int", "float") and isinstance(value, bool):
            return False
        return isinstance(value, kinds[annotation.id])
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name):
        if annotation.value.id == "Literal":
            options = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
            return any(isinstance(o, ast.Constant) and o.value == value for o in options)
        if annotation.value.id == "list":
            return isinstance(value, list)
    return True


def job_config_errors(data: dict, source: str) -> list[str]:
    """What torchtitan's ``ConfigManager`` would refuse in the loaded TOML ``data``, given ``JobConfig``'s source."""
    classes = dataclass_fields(source)
    sections = classes.get("JobConfig", {})
    errors = []
    for section, body in data.items():
        annotation = sections.get(section)
        if not isinstance(annotation, ast.Name) or annotation.id not in classes:
            errors.append(f"[{section}] is not a section of JobConfig")
            continue
        if not isinstance(body, dict):
            errors.append(f"[{section}] is not a table")
            continue
        fields = classes[annotation.id]
        for key, value in body.items():
            if key not in fields:
                errors.append(f"[{section}] {key} is not a field of {annotation.id}")
            elif not _accepts(fields[key], value):
                errors.append(f"[{section}] {key} = {value!r} does not fit {ast.unparse(fields[key])}")
    return errors
