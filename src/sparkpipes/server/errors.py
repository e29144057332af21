"""How the server answers what it cannot serve, on every surface: the JSON error body and
its OpenAPI models, the HTTP status of each kind of user error, and an unexpected
exception turned into the user error it stands for (never a stack trace)."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel, Field

from sparkpipes.errors import (
    AccessDeniedError,
    AlreadyExistsError,
    ConfigError,
    NotAdmittedError,
    NotFoundError,
    QueryError,
    SparkpipesError,
)

log = logging.getLogger("sparkpipes.server")


class ErrorDetail(BaseModel):
    code: str = Field(description="sparkpipes error code, e.g. SP700")
    message: str
    line: int | None = None
    column: int | None = None


class ApiError(BaseModel):
    """How the API answers a request it cannot serve (no stack trace, ever)."""

    error: ErrorDetail


#: the error answers every /api endpoint may give, for the OpenAPI document
ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ApiError, "description": "a bad request or statement"},
    401: {"model": ApiError, "description": "sign in first"},
    403: {
        "model": ApiError,
        "description": "the user lacks the privilege, or the query sandbox refused the statement",
    },
    404: {"model": ApiError, "description": "no such pipeline or table"},
    409: {"model": ApiError, "description": "the name is taken, or the state forbids it"},
    500: {"model": ApiError, "description": "a transient failure (retry)"},
}


def status_of(e: SparkpipesError) -> int:
    if isinstance(e, (AccessDeniedError, NotAdmittedError)):
        return 403
    if isinstance(e, NotFoundError):
        return 404
    if isinstance(e, AlreadyExistsError):
        return 409
    if isinstance(e, ConfigError):
        return 400
    return 400 if not e.transient else 500


def unexpected(e: BaseException) -> SparkpipesError:
    """An exception no statement should raise, as the user error it stands for: input
    nested too deeply for Python or for Spark's JVM (a stack overflow) is a QueryError
    saying so; anything else is logged (one line) and reported without its details."""
    if isinstance(e, SparkpipesError):
        return e
    if isinstance(e, RecursionError) or _java_class(e) == "java.lang.StackOverflowError":
        return QueryError("the statement is nested too deeply")
    log.warning("a statement failed: %s", _java_class(e) or type(e).__name__)
    return SparkpipesError(f"the statement failed ({type(e).__name__}): see the server's log")


def _java_class(e: BaseException) -> str | None:
    """The JVM exception class of a Py4J error, else None."""
    try:
        return str(e.java_exception.getClass().getName())  # type: ignore[attr-defined]
    except Exception:
        return None


def error_body(e: SparkpipesError) -> dict[str, Any]:
    """An error as the API answers it: the message, its code, and where in the SQL."""
    d: dict[str, Any] = {"code": e.code, "message": e.message}
    for key in ("line", "column"):
        if getattr(e, key, None) is not None:
            d[key] = getattr(e, key)
    return d
