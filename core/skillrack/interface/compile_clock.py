"""The compile-time limit, enforced while a schema is checked: work stops once it is exceeded.

The draft ("Resource limits") lists compilation time among the limits an
implementation MUST enforce.  Measuring the whole compilation and refusing it
afterwards would let one hostile schema hold a worker for as long as it likes,
so every loop of the checks calls :meth:`CompileClock.tick`, and the first tick
after the deadline raises ``resource_limit_exceeded`` (rule ``compile_time``)
there and then.

The longest step, validating the schema against its dialect's meta-schema,
runs inside jsonschema.  :func:`clocked_meta_validator` builds a validator that
ticks before every keyword it evaluates.  jsonschema switches to its stock
validator class wherever a schema names its ``$schema``, and every 2020-12
meta-schema does, so the clocked validator reads copies of the meta-schemas
without ``$schema`` (the same keywords, so the same verdicts) from its own
offline registry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from typing import Any, Final

from jsonschema import validators as jsonschema_validators  # type: ignore[import-untyped, unused-ignore]
from jsonschema_specifications import REGISTRY as META_SCHEMAS  # type: ignore[import-untyped, unused-ignore]
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from skillrack.interface.schemaerror import limit_exceeded
from skillrack.interface.schemawalk import RefusingRetriever, offline_registry

#: The clock source; a module attribute so that a test can replace it with a
#: deterministic one.
_now: Callable[[], float] = time.perf_counter

_DRAFT_2020_12: Final = "https://json-schema.org/draft/2020-12/schema"


class CompileClock:
    """The deadline of one compilation; :meth:`tick` raises once it has passed."""

    def __init__(self, seconds: float) -> None:
        self.deadline = _now() + seconds

    def tick(self) -> None:
        """Stop the compilation (``resource_limit_exceeded``) when the deadline has passed."""
        if _now() > self.deadline:
            raise limit_exceeded(
                "compile_time", "", "checking and compiling the schema took too long"
            )


#: The clock of the compilation running in this context, read by the meta-schema keywords.
_current: ContextVar[CompileClock | None] = ContextVar("skillrack_compile_clock", default=None)


@contextmanager
def running(clock: CompileClock) -> Iterator[None]:
    """Make ``clock`` the one the clocked meta-schema validator ticks, for this block."""
    token = _current.set(clock)
    try:
        yield
    finally:
        _current.reset(token)


def _clocked(keyword: Callable[..., Any]) -> Callable[..., Any]:
    def run(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        clock = _current.get()
        if clock is not None:
            clock.tick()
        return keyword(validator, value, instance, schema)

    return run


@cache
def _meta_registry() -> tuple[Mapping[str, Any], Registry[Any]]:
    """The 2020-12 meta-schemas without ``$schema``, and an offline registry holding them."""
    stripped: dict[str, Any] = {}
    for uri in META_SCHEMAS:
        if not uri.startswith("https://json-schema.org/draft/2020-12/"):
            continue
        contents = {k: v for k, v in META_SCHEMAS.contents(uri).items() if k != "$schema"}
        stripped[uri] = contents
    registry: Registry[Any] = offline_registry(RefusingRetriever()).with_resources(
        (uri, DRAFT202012.create_resource(contents)) for uri, contents in stripped.items()
    )
    return stripped, registry.crawl()


@cache
def _clocked_class(validator_class: Any) -> Any:
    return jsonschema_validators.extend(
        validator_class,
        {name: _clocked(func) for name, func in validator_class.VALIDATORS.items()},
    )


def clocked_meta_validator(validator_class: Any, dialect: str, format_checker: Any) -> Any:
    """A validator of schemas against ``dialect``'s meta-schema that ticks the running clock.

    It resolves only the bundled meta-schemas (a registry whose retrieval
    refuses), so checking a schema can fetch nothing.
    """
    if dialect != _DRAFT_2020_12:  # pragma: no cover - the only supported dialect
        raise ValueError(f"no clocked meta-schema for {dialect}")
    stripped, registry = _meta_registry()
    return _clocked_class(validator_class)(
        stripped[dialect], registry=registry, format_checker=format_checker
    )
