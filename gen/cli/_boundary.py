"""The single error boundary of the CLI."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from gen.errors import GenError

F = TypeVar("F", bound=Callable[..., Any])


def handle_errors(func: F) -> F:
    """Turn a :class:`GenError` into its formatted message on stderr and its exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except GenError as err:
            click.echo(err.format_message(), err=True)
            sys.exit(err.exit_code)

    return wrapper  # type: ignore[return-value]


def fail(message: str, code: int = 1) -> None:
    """Print ``message`` on stderr and exit with ``code``."""
    click.echo(message, err=True)
    sys.exit(code)
