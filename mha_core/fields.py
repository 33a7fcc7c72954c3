"""The declaration of every public function's arguments, and the checks behind it: both doors read it.

@arguments(d_model=Whole(1, 1024), ...) attaches a declaration to a function and checks every call against it, so a
Python user's call and the browser's (mha_page.bridge, which reads the same declaration) are refused alike; the
function's body, and the kernel it calls, take their input as given.

Each kind of field checks one value and returns it as the function wants it (a whole 8.0 becomes 8), or raises
Invalid with a message that names the argument and says why ("n_heads must be at least 1, got 0."). The JSON kinds
also say their limits as plain data (limits()), so that a widget's build puts the same bounds into its page. A field
a page's control fills may carry the control's name (Labelled): its refusal then also holds the reader's sentence
("Your code is empty."), which the browser's bridge answers with.
"""

from __future__ import annotations

import functools
import inspect
import math
import numbers
import types
from dataclasses import dataclass, field

import numpy as np


class Invalid(ValueError):
    """An argument outside its declaration; the message names it and says why. said: the same refusal in the
    reader's words, naming the control instead of the argument, when a Labelled field refused it (else None)."""
    said: str | None = None


def shown(value) -> str:
    """A short, readable rendering of any value for a message."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and abs(int(value)) >= 10**15:
        return f"a {len(str(abs(int(value))))}-digit number"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def whole_number(value) -> int | None:
    """value as an int if it is a whole number (8 or 8.0, not True), else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    return int(value) if math.isfinite(value) and value == math.floor(value) else None


@dataclass(frozen=True)
class Whole:
    """A whole number from low to high."""
    low: int
    high: int

    def check(self, name: str, value) -> int:
        number = whole_number(value)
        if number is None:
            raise Invalid(f"{name} must be a whole number, got {shown(value)}.")
        if number < self.low:
            raise Invalid(f"{name} must be at least {self.low:,}, got {number}.")
        if number > self.high:
            raise Invalid(f"{name} must be at most {self.high:,}, got {shown(number)}.")
        return number

    def limits(self) -> dict:
        return {"min": self.low, "max": self.high}


@dataclass(frozen=True)
class Between:
    """A number from low to high, both included."""
    low: float
    high: float
    LOW_INCLUDED = True  # Number: above low only

    def check(self, name: str, value) -> float:
        real = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if not (real and (self.low < value or self.LOW_INCLUDED and self.low == value) and value <= self.high):
            bounds = f"from {self.low:g} to" if self.LOW_INCLUDED else f"above {self.low:g} and at most"
            raise Invalid(f"{name} must be a number {bounds} {self.high:g}, got {shown(value)}.")
        return float(value)

    def limits(self) -> dict:
        return {"min" if self.LOW_INCLUDED else "above": self.low, "max": self.high}


@dataclass(frozen=True)
class Number(Between):
    """A number above low and at most high."""
    LOW_INCLUDED = False


@dataclass(frozen=True)
class Choice:
    """One of values; why, if given, says what they are."""
    values: tuple
    why: str = ""

    def check(self, name: str, value):
        for allowed in self.values:  # the declared value itself: 2.0 comes back as 2
            if value == allowed and isinstance(value, bool) == isinstance(allowed, bool):
                return allowed
        why = f" ({self.why})" if self.why else ""
        values = ", ".join(getattr(v, "__name__", str(v)) for v in self.values)  # float32, not <class ...>
        raise Invalid(f"{name} must be one of {values}{why}, got {shown(value)}.")

    def limits(self) -> dict:
        return {"values": list(self.values)}


@dataclass(frozen=True)
class Flag:
    """true or false."""

    def check(self, name: str, value) -> bool:
        if not isinstance(value, (bool, np.bool_)):
            raise Invalid(f"{name} must be true or false, got {shown(value)}.")
        return bool(value)

    def limits(self) -> dict:
        return {"values": [False, True]}


@dataclass(frozen=True)
class Text:
    """A string at most max_chars long (which bounds the work it causes), not blank unless blank is True."""
    max_chars: int
    blank: bool = False

    def check(self, name: str, value) -> str:
        if not isinstance(value, str):
            raise Invalid(f"{name} must be a string, got {type(value).__name__}.")
        if len(value) > self.max_chars:
            raise Invalid(f"{name} is too long: {len(value):,} characters (at most {self.max_chars:,}).")
        if not self.blank and not value.strip():
            raise Invalid(f"{name} is empty.")
        return value

    def limits(self) -> dict:
        return {"max_chars": self.max_chars}


@dataclass(frozen=True)
class TextOrTokens:
    """A text (a Text, named "text" in messages) or a list of at most max_chars non-blank token strings."""
    max_chars: int

    def check(self, name: str, value) -> str | list[str]:
        if isinstance(value, str):
            return Text(self.max_chars).check("text", value)
        if (not isinstance(value, list) or not 1 <= len(value) <= self.max_chars
                or not all(isinstance(t, str) and t.strip() for t in value)):
            raise Invalid(f"{name} must be a string or a list of 1 to {self.max_chars:,} non-blank token strings, "
                          f"got {shown(value)}.")
        return value

    def limits(self) -> dict:
        return {"max_chars": self.max_chars}


@dataclass(frozen=True)
class Labelled:
    """field, filled by a page's control that the reader knows as label, written as it starts a sentence ("Your
    code", "The learning rate"). A refusal keeps the argument's name for a Python caller and says, for the reader,
    the same sentence with label in place of its first word (what was refused: a field's message starts with it).
    Label the field of one value (a text, a number, a choice), not a list or an object of them."""
    field: object
    label: str

    def check(self, name: str, value):
        try:
            return self.field.check(name, value)
        except Invalid as refusal:
            if refusal.said is None:
                _, rest = str(refusal).split(" ", 1)
                refusal.said = f"{self.label} {rest}"
            raise

    def limits(self) -> dict:
        return self.field.limits()


@dataclass(frozen=True)
class ListOf:
    """A list of items, each as item declares it: at most max_items of them, or exactly length."""
    item: object
    max_items: int
    length: int | None = None

    def check(self, name: str, value) -> list:
        if not isinstance(value, (list, tuple)):
            raise Invalid(f"{name} must be a list, got {shown(value)}.")
        if self.length is not None and len(value) != self.length:
            raise Invalid(f"{name} must hold {self.length} items, got {len(value)}.")
        if len(value) > self.max_items:
            raise Invalid(f"{name} must hold at most {self.max_items} items, got {len(value)}.")
        return [self.item.check(f"{name}[{i}]", v) for i, v in enumerate(value)]

    def limits(self) -> dict:
        return {"item": self.item.limits(), "max_items": self.max_items}


@dataclass(frozen=True)
class Pair:
    """[first, second], each as declared; names says what the two are ("layer", "head")."""
    first: object
    second: object
    names: tuple[str, str]

    def check(self, name: str, value) -> tuple:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise Invalid(f"{name} must be a pair [{', '.join(self.names)}], got {shown(value)}.")
        return (self.first.check(f"{name}'s {self.names[0]}", value[0]),
                self.second.check(f"{name}'s {self.names[1]}", value[1]))

    def limits(self) -> dict:
        return {self.names[0]: self.first.limits(), self.names[1]: self.second.limits()}


@dataclass(frozen=True)
class Maybe:
    """null, or what field declares."""
    field: object

    def check(self, name: str, value):
        return None if value is None else self.field.check(name, value)

    def limits(self) -> dict:
        return {**self.field.limits(), "optional": True}


@dataclass(frozen=True)
class Fields:
    """An object (null for {}) of named fields, each as declared; a field left out keeps its default."""
    fields: dict = field(default_factory=dict)

    def check(self, name: str, value) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise Invalid(f"{name} must be an object of fields ({', '.join(self.fields)}), got {type(value).__name__}.")
        unknown = sorted(set(value) - set(self.fields))
        if unknown:
            raise Invalid(f"unknown {name} field {unknown[0]!r:.40}; known: {', '.join(self.fields)}.")
        return {key: self.fields[key].check(key, v) for key, v in value.items()}  # named alone, as the reader knows them

    def limits(self) -> dict:
        return {key: f.limits() for key, f in self.fields.items()}


KINDS = {"f": ("f", "hold floating-point numbers"), "i": ("iu", "hold integers"), "b": ("b", "be a bool array")}


@dataclass(frozen=True)
class Array:
    """What np.asarray makes a numeric array of (not copied), with one of ndim's numbers of dimensions (any if empty).

    kind "f": floating point, its values "finite", "no +inf" (-inf marks a masked score) or "any" (only moved
    about, never looked at); kind "i": integers (token ids); kind "b": bools (a mask).
    """
    ndim: tuple = ()
    values: str = "finite"
    kind: str = "f"

    def check(self, name: str, value) -> np.ndarray:
        try:
            a = np.asarray(value)
        except (ValueError, TypeError) as error:
            raise Invalid(f"{name} is not a numeric array: {error}") from None
        if a.dtype.kind not in KINDS[self.kind][0]:
            raise Invalid(f"{name} must {KINDS[self.kind][1]}, got dtype {a.dtype}.")
        if self.ndim and a.ndim not in self.ndim:
            raise Invalid(f"{name} must have {' or '.join(map(str, self.ndim))} dimensions, got shape {a.shape}.")
        if self.kind == "f" and self.values != "any" and not np.isfinite(a.sum()):  # cheap first, element-wise if it fails
            bad = np.isnan(a) | (np.isposinf(a) if self.values == "no +inf" else np.isinf(a))
            if bad.any():
                raise Invalid(f"{name} contains NaN or {'+inf' if self.values == 'no +inf' else 'infinite'} values.")
        return a


@dataclass(frozen=True)
class ArraysByName:
    """A dict of arrays by name (a model's weights), each as item declares it."""
    item: Array

    def check(self, name: str, value) -> dict:
        if not isinstance(value, dict):
            raise Invalid(f"{name} must be a dict of arrays by name, got {type(value).__name__}.")
        return {key: self.item.check(f"{name}[{key!r}]", v) for key, v in value.items()}


@dataclass(frozen=True)
class Instance:
    """An instance of cls, or of one of a tuple of classes (a configuration object)."""
    cls: type | tuple

    def check(self, name: str, value):
        if not isinstance(value, self.cls):
            names = " or ".join(c.__name__ for c in (self.cls if isinstance(self.cls, tuple) else (self.cls,)))
            raise Invalid(f"{name} must be a {names}, got {type(value).__name__}.")
        return value


@dataclass(frozen=True)
class Having:
    """An object with these methods, what it is said in words (a random generator: mha_core.rng.Random or NumPy's)."""
    methods: tuple
    what: str

    def check(self, name: str, value):
        if not all(callable(getattr(value, method, None)) for method in self.methods):
            raise Invalid(f"{name} must be {self.what} (with {', '.join(self.methods)}), got {type(value).__name__}.")
        return value


@dataclass(frozen=True)
class Anything:
    """Any value: what a relation looks at (softmax's axis, checked against x's dimensions)."""

    def check(self, name: str, value):
        return value


class Declared:
    """A function with the declaration of each of its arguments: calling it checks them, then runs fn.

    fn is the function itself, which trusts its input (the kernel calls it); args maps each argument to its field;
    relations are functions of the checked arguments (a dict of those given: defaults are trusted and left out)
    that raise ValueError when the arguments do not fit together. As a class attribute it binds like a method.
    """

    def __init__(self, fn, args: dict, relations: tuple = ()):
        functools.update_wrapper(self, fn)
        self.fn, self.args, self.relations = fn, args, relations
        self.signature = inspect.signature(fn)
        undeclared = sorted(set(self.signature.parameters) - set(args) - {"self"})
        unknown = sorted(set(args) - set(self.signature.parameters))
        if undeclared or unknown:  # a mistake in mha_core itself, found when it is imported
            raise TypeError(f"{fn.__qualname__}: declare each argument once: undeclared {undeclared}, unknown {unknown}")

    def checked(self, args: dict) -> dict:
        """args as the declarations read them; Invalid names the first that is not, ValueError a misfit."""
        args = {name: self.args[name].check(name, value) if name in self.args else value
                for name, value in args.items()}
        for fits in self.relations:
            fits(args)
        return args

    def __call__(self, *args, **kwargs):
        return self.fn(**self.checked(self.signature.bind(*args, **kwargs).arguments))

    def __get__(self, instance, owner=None):
        return self if instance is None else types.MethodType(self, instance)


def arguments(*relations, **args):
    """@arguments(relation, ..., name=field, ...): attach this declaration to a function (a Declared)."""
    return lambda fn: Declared(fn, args, relations)
