"""The dataclass stand-in behaves like the standard one for everything qex uses."""

from __future__ import annotations

import sys

import pytest

from qex.core.model import (
    FrozenInstanceError,
    asdict,
    dataclass,
    field,
    fields,
    replace,
    shallow_copy,
)


@dataclass
class Plain:
    a: int
    b: str = "x"
    items: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Frozen:
    a: int
    b: tuple[int, ...] = ()


@dataclass
class Child(Plain):
    c: float = 1.0


@dataclass
class Checked:
    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("negative")


def test_defaults_and_fresh_factories() -> None:
    one, two = Plain(1), Plain(2)
    one.items.append(5)
    assert two.items == []
    assert Plain(1, "y") == Plain(a=1, b="y")
    assert Plain(1) != Plain(2)
    assert repr(Plain(1)) == "Plain(a=1, b='x', items=[])"


def test_argument_errors() -> None:
    with pytest.raises(TypeError, match="missing"):
        Plain()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected"):
        Plain(1, nope=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple"):
        Plain(1, a=2)  # type: ignore[misc]


def test_frozen_is_hashable_and_read_only() -> None:
    value = Frozen(1, (2,))
    assert hash(value) == hash(Frozen(1, (2,)))
    assert {value, Frozen(1, (2,))} == {value}
    with pytest.raises(FrozenInstanceError):
        value.a = 3  # type: ignore[misc]


def test_inheritance_post_init_and_helpers() -> None:
    child = Child(1, c=2.5)
    assert [f.name for f in fields(child)] == ["a", "b", "items", "c"]
    assert asdict(child) == {"a": 1, "b": "x", "items": [], "c": 2.5}
    assert replace(child, b="z") == Child(1, "z", [], 2.5)
    with pytest.raises(ValueError):
        Checked(-1)
    with pytest.raises(TypeError):
        replace(child, nope=1)


def test_equality_of_one_field_no_field_and_a_subclass() -> None:
    @dataclass(frozen=True)
    class One:
        a: int

    @dataclass(frozen=True)
    class Empty:
        pass

    assert One(1) == One(1) and One(1) != One(2) and hash(One(1)) == hash(One(1))
    assert Empty() == Empty() and hash(Empty()) == hash(Empty())
    # The subclass compares its own field too, and never equals its base.
    assert Child(1, c=2.0) != Child(1, c=3.0) and Child(1) == Child(1)
    assert Plain(1) != Child(1) and Child(1) != Plain(1)


def test_a_shallow_copy_keeps_its_values_when_the_original_changes() -> None:
    original = Child(1, "y", [4], 2.0)
    copy = shallow_copy(original)
    assert copy == original and copy is not original and type(copy) is Child
    original.b, original.items = "z", [5]  # qex replaces containers, never edits them
    assert (copy.b, copy.items) == ("y", [4])
    frozen = Frozen(1, (2,))
    assert shallow_copy(frozen) == frozen


def test_the_records_import_no_dataclasses_module() -> None:
    import os
    import subprocess

    code = ("import sys, qex.core.records, qex.core.config, qex.supervisor.runner; "
            "print('dataclasses' in sys.modules, 'inspect' in sys.modules)")
    # Under `pytest --cov` a child measures itself, and coverage imports both modules: the
    # question is what qex imports, so the child runs without it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env)
    assert out.stdout.split() == ["False", "False"]


def test_a_hot_class_gets_a_compiled_init_that_behaves_the_same() -> None:
    from qex.core import model

    @dataclass
    class Hot:
        a: int
        b: list[int] = field(default_factory=list)

    generic = Hot.__init__
    made = [Hot(i) for i in range(model.COMPILE_AFTER + 2)]
    assert Hot.__init__ is not generic
    assert made[-1] == Hot(model.COMPILE_AFTER + 1)
    assert made[-1].b == [] and made[-1].b is not made[-2].b
    with pytest.raises(TypeError):
        Hot()  # type: ignore[call-arg]


# --- against the standard library ------------------------------------------------------------
#
# The same class shape is built twice, once with `dataclasses` and once with `qex.core.model`,
# and every operation qex uses must agree: construction (and its TypeErrors), defaults and
# fresh factory values, repr, eq, hash of frozen classes, frozen assignment, fields, asdict,
# replace, inheritance, and the compiled `__init__` of a hot class.

import dataclasses as std  # noqa: E402  (the reference this section compares with)
from collections.abc import Callable  # noqa: E402
from typing import Any  # noqa: E402

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from qex.core import model  # noqa: E402

_VALUES = st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3), st.booleans(),
                    st.tuples(st.integers(0, 3)))
_FACTORIES: list[Callable[[], Any]] = [list, dict, lambda: [1, 2], lambda: {"k": []}]


@st.composite
def _shapes(draw: st.DrawFn, prefix: str = "f") -> list[tuple[str, str, Any]]:
    """Fields as (name, kind, default): required ones first, as both implementations need."""
    required = draw(st.integers(0, 3))
    optional = draw(st.lists(st.one_of(
        st.tuples(st.just("default"), _VALUES),
        st.tuples(st.just("factory"), st.sampled_from(range(len(_FACTORIES)))),
    ), max_size=3))
    shape = [(f"{prefix}{i}", "required", None) for i in range(required)]
    shape += [(f"{prefix}{required + i}", kind, value) for i, (kind, value) in enumerate(optional)]
    return shape


def _namespace(shape: list[tuple[str, str, Any]], field_of: Any) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__annotations__": {name: "Any" for name, _, _ in shape}}
    for name, kind, value in shape:
        if kind == "default":
            namespace[name] = value
        elif kind == "factory":
            namespace[name] = field_of(default_factory=_FACTORIES[value])
    return namespace


def _pair(shape: list[tuple[str, str, Any]], frozen: bool,
          base: tuple[type, type] | None = None) -> tuple[type, type]:
    ours = model.dataclass(frozen=frozen)(
        type("C", (base[0],) if base else (), _namespace(shape, model.field)))
    theirs = std.dataclass(frozen=frozen)(
        type("C", (base[1],) if base else (), _namespace(shape, std.field)))
    return ours, theirs


def _build(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        return cls(*args, **kwargs)
    except TypeError:
        return TypeError


def _same(ours: Any, theirs: Any) -> None:
    assert repr(ours) == repr(theirs)
    assert [f.name for f in model.fields(ours)] == [f.name for f in std.fields(theirs)]
    assert model.asdict(ours) == std.asdict(theirs)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


_CALLS = st.tuples(st.lists(_VALUES, max_size=6), st.dictionaries(
    st.sampled_from(["f0", "f1", "f2", "f3", "f4", "f5", "g0", "g1", "nope"]), _VALUES,
    max_size=4))


@settings(max_examples=150, deadline=None)
@given(_shapes(), st.booleans(), _CALLS)
def test_construction_repr_eq_and_helpers_match_dataclasses(
        shape: list[tuple[str, str, Any]], frozen: bool,
        call: tuple[list[Any], dict[str, Any]]) -> None:
    ours_cls, theirs_cls = _pair(shape, frozen)
    args, kwargs = tuple(call[0]), call[1]
    ours, theirs = _build(ours_cls, args, kwargs), _build(theirs_cls, args, kwargs)
    assert (ours is TypeError) == (theirs is TypeError)
    if ours is TypeError:
        return
    _same(ours, theirs)
    twin_ours, twin_theirs = ours_cls(*args, **kwargs), theirs_cls(*args, **kwargs)
    assert (ours == twin_ours) == (theirs == twin_theirs)
    assert ours != object() and theirs != object()
    for name, kind, _ in shape:
        if kind == "factory" and name not in kwargs and len(args) <= int(name[1:]):
            assert getattr(ours, name) is not getattr(twin_ours, name)
    if frozen:
        assert _hashable(ours) == _hashable(theirs)
        if _hashable(ours):
            assert hash(ours) == hash(twin_ours)
        for target in (ours, theirs):
            with pytest.raises(AttributeError):
                setattr(target, "f0", 1)  # noqa: B010
    else:
        assert ours_cls.__hash__ is None and theirs_cls.__hash__ is None
    if shape:
        name = shape[-1][0]
        _same(model.replace(ours, **{name: "new"}), std.replace(theirs, **{name: "new"}))
    with pytest.raises(TypeError):
        model.replace(ours, nope=1)
    with pytest.raises(TypeError):
        std.replace(theirs, nope=1)


@settings(max_examples=60, deadline=None)
@given(_shapes("f"), _shapes("g"), _CALLS)
def test_inheritance_matches_dataclasses(base: list[tuple[str, str, Any]],
                                         child: list[tuple[str, str, Any]],
                                         call: tuple[list[Any], dict[str, Any]]) -> None:
    try:
        bases = _pair(base, False)
        theirs_cls = std.dataclass(type("C", (bases[1],), _namespace(child, std.field)))
    except TypeError:
        return  # a required field after a default one: the standard library refuses the shape
    ours_cls = model.dataclass(type("C", (bases[0],), _namespace(child, model.field)))
    args, kwargs = tuple(call[0]), call[1]
    ours, theirs = _build(ours_cls, args, kwargs), _build(theirs_cls, args, kwargs)
    assert (ours is TypeError) == (theirs is TypeError)
    if ours is not TypeError:
        _same(ours, theirs)


@settings(max_examples=40, deadline=None)
@given(_shapes(), st.booleans(), _CALLS)
def test_the_compiled_init_matches_the_generic_one(
        shape: list[tuple[str, str, Any]], frozen: bool,
        call: tuple[list[Any], dict[str, Any]]) -> None:
    ours_cls, theirs_cls = _pair(shape, frozen)
    args, kwargs = tuple(call[0]), call[1]
    generic = ours_cls.__init__
    required = [name for name, kind, _ in shape if kind == "required"]
    for _ in range(model.COMPILE_AFTER):
        ours_cls(*[0] * len(required))
    assert ours_cls.__init__ is not generic
    ours, theirs = _build(ours_cls, args, kwargs), _build(theirs_cls, args, kwargs)
    assert (ours is TypeError) == (theirs is TypeError)
    if ours is not TypeError:
        _same(ours, theirs)
