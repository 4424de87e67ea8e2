"""A small, fast stand-in for `dataclasses`: records and value classes without the import cost.

Why not the standard library: `import dataclasses` pulls in `inspect` (and with it `ast`,
`dis`, `tokenize`), and every decorated class then compiles generated code. In qex that was
most of the start-up of a status query and a few megabytes of every supervisor, which are the
two things the design promises to keep small. This module keeps the same spelling for the
subset qex uses — `@dataclass`, `@dataclass(frozen=True)`, `field(default=...,
default_factory=...)`, `fields`, `asdict`, `replace`, `__post_init__` — so a reader (and
mypy, through `typing.dataclass_transform`) sees ordinary dataclasses.

What it does not do: `order=`, `InitVar`, `KW_ONLY`, or per-field `init`/`repr`/`compare`
flags. `slots=True` is accepted and ignored. `__init__` is generic until a class is hot,
then compiled (see `COMPILE_AFTER`); the other methods are generic.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` would cost a reader of logs more than the module itself
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform, overload

    T = TypeVar("T")
else:
    def dataclass_transform(**_options: object) -> object:
        """At run time the decorator only tells type checkers about `dataclass`."""
        return lambda function: function

_MISSING: Any = object()
_FIELDS = "__qex_fields__"
_FROZEN = "__qex_frozen__"


class FrozenInstanceError(AttributeError):
    """An assignment to a field of a frozen instance."""


class Field:
    """One field: its name, and its default or the factory that makes one."""

    __slots__ = ("default", "default_factory", "name")

    def __init__(self, default: Any = _MISSING, default_factory: Any = _MISSING) -> None:
        self.name = ""
        self.default = default
        self.default_factory = default_factory

    def __repr__(self) -> str:
        return f"Field(name={self.name!r})"

    def value(self) -> Any:
        if self.default_factory is not _MISSING:
            return self.default_factory()
        return self.default


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] = _MISSING) -> Any:
    """A field with a default, or with a factory for a fresh mutable default."""
    return Field(default=default, default_factory=default_factory)


def _collect(cls: type) -> tuple[Field, ...]:
    inherited: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for item in base.__dict__.get(_FIELDS, ()):
            inherited[item.name] = item
    own: dict[str, Any] = vars(cls).get("__annotations__", {})
    for name, annotation in own.items():
        if isinstance(annotation, str) and annotation.startswith("ClassVar"):
            continue
        raw = cls.__dict__.get(name, _MISSING)
        spec = raw if isinstance(raw, Field) else Field(default=raw)
        spec.name = name
        if isinstance(raw, Field):
            # The class attribute must not shadow instances: keep a plain default there.
            if raw.default is not _MISSING:
                setattr(cls, name, raw.default)
            else:
                delattr(cls, name)
        inherited.pop(name, None)
        inherited[name] = spec
    return tuple(inherited.values())


#: A class's `__init__` is compiled at this many instances. Compiling costs ~0.3 ms per class,
#: which a short-lived command would pay for dozens of classes it builds once or twice; the
#: generic path costs a few microseconds per instance, which only the long-lived coordinator
#: (thousands of views per scheduler pass) would notice.
COMPILE_AFTER = 64


def _make_init(specs: tuple[Field, ...], frozen: bool) -> Callable[..., None]:
    """A generic `__init__` that replaces itself by a compiled one once the class is hot."""
    names = [spec.name for spec in specs]
    by_name = {spec.name: spec for spec in specs}
    setter = object.__setattr__
    calls = 0

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == COMPILE_AFTER:
            owner = next(c for c in type(self).__mro__ if c.__dict__.get("__init__") is __init__)
            setattr(owner, "__init__", _compile_init(specs, frozen))  # noqa: B010
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes {len(names)} positional arguments "
                            f"but {len(args)} were given")
        for name, value in zip(names, args, strict=False):
            if name in kwargs:
                raise TypeError(f"{type(self).__name__}() got multiple values for {name!r}")
            setter(self, name, value)
        for name in names[len(args):]:
            if name in kwargs:
                setter(self, name, kwargs.pop(name))
                continue
            spec = by_name[name]
            if spec.default is _MISSING and spec.default_factory is _MISSING:
                raise TypeError(f"{type(self).__name__}() is missing the argument {name!r}")
            setter(self, name, spec.value())
        if kwargs:
            unknown = ", ".join(sorted(kwargs))
            raise TypeError(f"{type(self).__name__}() got unexpected arguments: {unknown}")
        post = getattr(self, "__post_init__", None)
        if post is not None:
            post()

    return __init__


def _compile_init(specs: tuple[Field, ...], frozen: bool) -> Callable[..., None]:
    namespace: dict[str, Any] = {"_MISSING": _MISSING, "_set": object.__setattr__}
    params: list[str] = []
    body: list[str] = []
    for index, spec in enumerate(specs):
        name = spec.name
        if spec.default_factory is not _MISSING:
            namespace[f"_factory_{index}"] = spec.default_factory
            params.append(f"{name}=_MISSING")
            value = f"_factory_{index}() if {name} is _MISSING else {name}"
        elif spec.default is not _MISSING:
            namespace[f"_default_{index}"] = spec.default
            params.append(f"{name}=_default_{index}")
            value = name
        else:
            params.append(name)
            value = name
        assign = f"_set(self, {name!r}, {value})" if frozen else f"self.{name} = {value}"
        body.append(f"    {assign}")
    body.append("    _post = getattr(self, '__post_init__', None)")
    body.append("    if _post is not None:")
    body.append("        _post()")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(compile(source, "<qex.core.model>", "exec"), namespace)
    init: Callable[..., None] = namespace["__init__"]
    return init


#: Per class, a C-level getter of all its fields as one tuple (`operator.attrgetter`), made
#: at the class's first comparison: the coordinator compares a supervisor's record with the
#: one it holds at every note, and a getattr per field in Python was most of that test.
_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _values(self: Any) -> tuple[Any, ...]:
    cls = self.__class__
    getter = _GETTERS.get(cls)
    if getter is None:
        getter = _GETTERS[cls] = _fields_getter(getattr(cls, _FIELDS))
    return getter(self)


def _fields_getter(specs: tuple[Field, ...]) -> Callable[[Any], tuple[Any, ...]]:
    from operator import attrgetter  # not at import: a status query never compares records

    names = [spec.name for spec in specs]
    if len(names) > 1:
        getter: Callable[[Any], tuple[Any, ...]] = attrgetter(*names)
        return getter
    if names:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return lambda _obj: ()


def shallow_copy(obj: T) -> T:
    """A new instance with the same field values, the values themselves shared.

    A snapshot of a record at one moment, at the cost of one dict copy. It stays true only
    because qex replaces a record's lists and dicts instead of changing them in place; the
    event ring (`qex.coordinator.events`) and a start's rollback rely on that."""
    copy: T = object.__new__(obj.__class__)
    copy.__dict__.update(obj.__dict__)
    return copy


def _repr(self: Any) -> str:
    specs = getattr(self, _FIELDS)
    inner = ", ".join(f"{spec.name}={getattr(self, spec.name)!r}" for spec in specs)
    return f"{type(self).__qualname__}({inner})"


def _eq(self: Any, other: object) -> Any:
    if other.__class__ is not self.__class__:
        return NotImplemented
    return _values(self) == _values(other)


def _hash(self: Any) -> int:
    return hash((self.__class__, _values(self)))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")


def _process(cls: type[T], frozen: bool) -> type[T]:
    specs = _collect(cls)
    setattr(cls, _FIELDS, specs)
    setattr(cls, _FROZEN, frozen)
    setattr(cls, "__init__", _make_init(specs, frozen))  # noqa: B010
    if "__repr__" not in cls.__dict__:
        setattr(cls, "__repr__", _repr)  # noqa: B010
    if "__eq__" not in cls.__dict__:
        setattr(cls, "__eq__", _eq)  # noqa: B010
    if frozen:
        setattr(cls, "__setattr__", _frozen_setattr)  # noqa: B010
        setattr(cls, "__delattr__", _frozen_delattr)  # noqa: B010
        setattr(cls, "__hash__", _hash)  # noqa: B010
    elif "__hash__" not in cls.__dict__:
        setattr(cls, "__hash__", None)  # noqa: B010
    return cls


if TYPE_CHECKING:
    @overload
    def dataclass(cls: type[T], /) -> type[T]: ...

    @overload
    def dataclass(*, frozen: bool = False,
                  slots: bool = False) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(field, Field))
def dataclass(cls: type[T] | None = None, /, *, frozen: bool = False,
              slots: bool = False) -> Any:
    """Make `cls` a record class: `__init__`, `__repr__`, `__eq__` from its annotations."""
    del slots  # accepted for the same spelling; instances keep a __dict__
    if cls is None:
        return lambda inner: _process(inner, frozen)
    return _process(cls, frozen)


def fields(obj: Any) -> tuple[Field, ...]:
    """The fields of a record class or instance, in declaration order."""
    specs = getattr(obj, _FIELDS, None)
    if specs is None:
        raise TypeError(f"{obj!r} is not a record class or instance")
    return tuple(specs)


def is_record(obj: Any) -> bool:
    return hasattr(obj, _FIELDS)


def asdict(obj: Any) -> Any:
    """The record as plain dicts and lists, records inside it included."""
    if hasattr(obj, _FIELDS) and not isinstance(obj, type):
        return {spec.name: asdict(getattr(obj, spec.name)) for spec in getattr(obj, _FIELDS)}
    if isinstance(obj, dict):
        return {key: asdict(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(asdict(value) for value in obj)
    return obj


def replace(obj: T, /, **changes: Any) -> T:
    """A copy of a record with some fields changed."""
    values = {spec.name: getattr(obj, spec.name) for spec in getattr(obj, _FIELDS)}
    unknown = set(changes) - set(values)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field {sorted(unknown)[0]!r}")
    values.update(changes)
    return type(obj)(**values)
