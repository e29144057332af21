"""Facade methods that are their service's method, declared once.

A facade (``sparkpipes.Engine``) offers its services' operations under the names users
know. Writing each one again (signature, defaults, docstring, a call that passes every
argument on) made the facade a second copy of every service to keep in step. ``forward``
makes the facade's method from the service's own: the same signature, type hints and
docstring (``help`` and ``inspect.signature`` show the service's), and a call that reaches
the service the facade holds under ``attribute``. Only pure forwards use it; a facade
method that does more is written out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


def forward(
    attribute: str, method: Callable[Concatenate[Any, P], R]
) -> Callable[Concatenate[Any, P], R]:
    """A method calling ``getattr(self, attribute).<method's name>`` with its arguments."""
    name = method.__name__

    @functools.wraps(method)
    def call(self: Any, *args: P.args, **kwargs: P.kwargs) -> R:
        return getattr(getattr(self, attribute), name)(*args, **kwargs)

    return call
