"""Tests for gen.errors: the error tree drawn in the docstring is the tree of classes."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import pytest

import gen
import gen.errors
from gen.errors import GenError

_TREE_LINE = re.compile(r"^(?P<indent>(?:[│ ] {3})*)(?:[├└]── )?(?P<name>[A-Za-z]+Error)\s")


def _drawn_tree() -> dict[str, str | None]:
    """Class name → parent name, as drawn under "The tree" in gen.errors' docstring."""
    doc = gen.errors.__doc__ or ""
    block = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for line in block.splitlines():
        match = _TREE_LINE.match(line.removeprefix("    "))
        assert match is not None, f"not a line of the tree: {line!r}"
        depth = len(match["indent"]) // 4 + (0 if line.strip().startswith("GenError") else 1)
        del stack[depth:]
        parents[match["name"]] = stack[-1] if stack else None
        stack.append(match["name"])
    return parents


def _defined() -> dict[str, type[GenError]]:
    """Every GenError subclass (and GenError) defined in gen.errors itself."""
    return {
        name: obj for name, obj in vars(gen.errors).items()
        if inspect.isclass(obj) and issubclass(obj, GenError) and obj.__module__ == "gen.errors"
    }


def test_tree_names_every_error_class_and_nothing_else() -> None:
    """The drawn tree and the classes in gen.errors are the same set of names."""
    assert set(_drawn_tree()) == set(_defined())


def test_tree_parents_match_the_classes() -> None:
    """Each class is drawn under its direct base class."""
    classes = _defined()
    for name, parent in _drawn_tree().items():
        bases = [b.__name__ for b in classes[name].__bases__ if issubclass(b, GenError)]
        assert bases == ([parent] if parent else []), name


def test_every_gen_error_subclass_lives_in_gen_errors() -> None:
    """No GenError subclass is defined anywhere but gen.errors (once every module is loaded)."""
    for module in pkgutil.walk_packages(gen.__path__, "gen."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)

    def walk(cls: type[GenError]) -> list[type[GenError]]:
        return [cls, *(c for sub in cls.__subclasses__() for c in walk(sub))]

    outside = [c for c in walk(GenError) if c.__module__ != "gen.errors"
               and c.__module__.startswith("gen")]
    assert outside == []


@pytest.mark.parametrize("name", sorted(_defined()))
def test_default_rule_is_a_registered_rule(name: str) -> None:
    """Every error's default rule id is in the rule registry."""
    from gen.rules import RULES

    assert _defined()[name].default_rule in RULES


def test_exit_codes() -> None:
    """Exit 1 for every error except a bad PROFILE=COUNT argument, which is a usage error."""
    codes = {name: cls.exit_code for name, cls in _defined().items()}
    assert {name for name, code in codes.items() if code != 1} == {"LayoutSyntaxError"}
    assert codes["LayoutSyntaxError"] == 2


def test_kubeconform_error_keeps_the_process_details() -> None:
    """KubeconformError.from_process quotes the last stderr lines and keeps the command."""
    import subprocess

    stderr = "\n".join(f"line {i}" for i in range(30))
    process = subprocess.CompletedProcess(["kubeconform", "-summary"], 3, "", stderr)
    err = gen.errors.KubeconformError.from_process(process, "crashed")
    assert err.command == ("kubeconform", "-summary")
    assert err.returncode == 3
    assert err.stderr_tail.splitlines() == [f"line {i}" for i in range(10, 30)]
    assert err.message.startswith("kubeconform crashed (exit code 3); stderr:\nline 10\n")
    assert isinstance(err, gen.errors.ToolError)
    assert err.default_rule == "GEN021"
