"""The dataclass stand-in behaves like the standard one for everything qex uses."""

from __future__ import annotations

import sys

import pytest

from qex.core.model import FrozenInstanceError, asdict, dataclass, field, fields, replace


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


def test_the_records_import_no_dataclasses_module() -> None:
    import subprocess

    code = ("import sys, qex.core.records, qex.core.config, qex.supervisor.runner; "
            "print('dataclasses' in sys.modules, 'inspect' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
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
