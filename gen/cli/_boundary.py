"""The single exit boundary of the CLI: the only place that turns outcomes into exit codes.

Every command is wrapped in :func:`handle_errors`. A command prints its result and returns
its exit code (``None`` or 0: ok; 1: findings, a failed check, something that does not fit)
or raises a :class:`gen.errors.GenError`, whose formatted message goes to stderr with the
error's exit code. Click's own usage errors (``click.UsageError``, bad parameters) pass
through untouched and keep click's exit 2. Codes follow the CLI contract: 0 ok, 1 findings,
2 usage.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec

import click

from gen.errors import GenError

__all__ = ["handle_errors"]

P = ParamSpec("P")


def handle_errors(func: Callable[P, int | None]) -> Callable[P, None]:
    """Run a command; exit with the code it returns, or report the GenError it raises."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        try:
            code = func(*args, **kwargs)
        except GenError as err:
            click.echo(err.format_message(), err=True)
            code = err.exit_code
        if code:
            raise click.exceptions.Exit(code)

    return wrapper
