"""How ``skillrack serve`` writes its log: text, or one JSON object per line.

``--log-format json`` (or ``[server] log_format = "json"``) is for log
pipelines: every line of skillrack, uvicorn and a2a-sdk is one JSON object
with ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``, and
``task_id``, ``skill`` and ``code`` (the condition code) where the line is
about a task, ``trace_id`` and ``span_id`` where an OpenTelemetry span is
current (null otherwise, and always when ``opentelemetry`` is not
installed).  An access line also has ``client``, ``method``, ``path``,
``http_version`` and ``status`` as fields of their own; ``serve``'s start-up
banner is JSON lines too (logger ``skillrack.serve``).

The hygiene is the text log's: a message is the same text either way (the
executor's lines carry ids, skill names and codes, never argument values or
credentials), and an exception is written as its type and the frames where
it was raised, never its message (``str(exc)`` of a failed database call can
hold a password or an argument).  The structured fields come from
``extra={"task_id": ..., "skill": ..., "code": ...}`` on the log call.

Both formats give the root logger a handler at ``--log-level``, so the audit
lines (``skillrack.audit``, at INFO) reach the log when the level lets them.

**No secret at any level.**  Every handler has a :class:`SecretFilter`, so
every line of skillrack, uvicorn, a2a-sdk and any library passes it:

* the secrets the configuration holds (:func:`remember_secrets`, called with
  :func:`skillrack.host.secrets.secret_values` once the configuration is
  read, in every worker) are masked wherever they appear, as are a URL's
  password, header values of ``Authorization``, ``X-API-Key`` and cookies,
  bearer tokens and JWTs (:func:`skillrack.host.secrets.redact`), in the
  message, its arguments and an exception's text;
* the DEBUG lines of a2a-sdk and of the database drivers (aiosqlite,
  SQLAlchemy, asyncpg) keep only their ids, numbers and states: any other
  argument (the call context, whose state holds the request's headers and
  so the caller's API key or bearer token; a request body, which holds the
  arguments and a push config's credentials; a task; an SQL statement with
  its parameters) is replaced by its type name.  Those lines trace the
  libraries' steps; their payloads are in the task store.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import logging
import re
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from skillrack.host.secrets import redact

try:  # opentelemetry-api arrives with a2a-sdk; a missing one only means no trace ids
    from opentelemetry import trace as _trace

    _TRACES = True
except ImportError:  # pragma: no cover - depends on the environment
    _TRACES = False

#: The values ``--log-format`` and ``[server] log_format`` take.
LOG_FORMATS = ("text", "json")
#: The structured fields a log call may give in ``extra``.
TASK_FIELDS = ("task_id", "skill", "code")


def current_trace_ids() -> tuple[str | None, str | None]:
    """The current OpenTelemetry span's trace and span id (W3C hex), or ``(None, None)``."""
    if not _TRACES:
        return None, None
    context = _trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None, None
    return format(context.trace_id, "032x"), format(context.span_id, "016x")


#: uvicorn's access record: ``(client_addr, method, full_path, http_version, status_code)``.
ACCESS_FIELDS = ("client", "method", "path", "http_version", "status")


def _access_fields(args: tuple[Any, ...]) -> dict[str, Any]:
    """An access line's request as separate fields, not one ``"GET /x HTTP/1.1"`` string."""
    if len(args) != len(ACCESS_FIELDS):
        return {}
    return dict(zip(ACCESS_FIELDS, args, strict=True))


class JsonFormatter(logging.Formatter):
    """One JSON object per record (see the module docstring for the fields)."""

    def format(self, record: logging.LogRecord) -> str:
        trace_id, span_id = current_trace_ids()
        line: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in TASK_FIELDS:
            line[name] = getattr(record, name, None)
        if record.name == "uvicorn.access" and isinstance(record.args, tuple):
            line.update(_access_fields(record.args))
        line["trace_id"] = trace_id
        line["span_id"] = span_id
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            line["exception"] = type(exc).__name__  # never str(exc): see the module docstring
            line["frames"] = "".join(traceback.format_tb(exc.__traceback__))
        return json.dumps(line, ensure_ascii=False, default=str)


#: The secrets :class:`SecretFilter` masks by value (see :func:`remember_secrets`).
_KNOWN_SECRETS: set[str] = set()
#: Libraries whose DEBUG lines carry payloads (a call context and its headers, a request
#: body, a task, an SQL statement's parameters): only their plain arguments are kept.
_PAYLOAD_LOGGERS = ("a2a", "aiosqlite", "sqlalchemy", "asyncpg")
#: Such a DEBUG argument kept as it is: an id, a name or a state, nothing longer.
_PLAIN_ARGUMENT = re.compile(r"[A-Za-z0-9_.:@/-]{0,128}")


def remember_secrets(values: Iterable[str]) -> None:
    """Mask these values in every log line from now on (the configuration's secrets)."""
    _KNOWN_SECRETS.update(v for v in values if v)


class SecretFilter(logging.Filter):
    """Masks secrets in every record it sees (see the module docstring); drops none."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "skillrack_masked", False):
            return True  # another handler's filter did it already
        record.skillrack_masked = True
        scrub = record.levelno <= logging.DEBUG and record.name.startswith(_PAYLOAD_LOGGERS)
        if isinstance(record.args, Mapping):
            record.args = {k: self._argument(v, scrub) for k, v in record.args.items()}
        elif record.args:
            record.args = tuple(self._argument(v, scrub) for v in record.args)
        if isinstance(record.msg, str):
            record.msg = redact(record.msg, _KNOWN_SECRETS)
        else:
            record.msg = redact(str(record.msg), _KNOWN_SECRETS)
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text, _KNOWN_SECRETS)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, _KNOWN_SECRETS)
        return True

    @staticmethod
    def _argument(value: Any, scrub: bool) -> Any:
        if value is None or isinstance(value, bool | int | float | enum.Enum):
            return value
        if scrub and not (isinstance(value, str) and _PLAIN_ARGUMENT.fullmatch(value)):
            return f"<{type(value).__name__}, not logged>"
        return redact(str(value), _KNOWN_SECRETS)


def log_config(log_format: str, level: str) -> dict[str, Any]:
    """uvicorn's ``log_config``: its loggers and the root logger in ``log_format`` at ``level``."""
    if log_format == "json":
        formatters: dict[str, Any] = {
            "default": {"()": f"{__name__}.JsonFormatter"},
            "access": {"()": f"{__name__}.JsonFormatter"},
            "root": {"()": f"{__name__}.JsonFormatter"},
        }
    else:
        formatters = {
            "default": {
                "()": "uvicorn.logging.DefaultFormatter",
                "fmt": "%(levelprefix)s %(message)s",
            },
            "access": {
                "()": "uvicorn.logging.AccessFormatter",
                "fmt": '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s',
            },
            "root": {
                "()": "uvicorn.logging.DefaultFormatter",
                "fmt": "%(levelprefix)s %(name)s: %(message)s",
            },
        }
    stderr = {
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stderr",
        "filters": ["secrets"],
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": formatters,
        "filters": {"secrets": {"()": f"{__name__}.SecretFilter"}},
        "handlers": {
            "default": {**stderr, "formatter": "default"},
            "access": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stdout",
                "formatter": "access",
                "filters": ["secrets"],
            },
            "root": {**stderr, "formatter": "root"},
        },
        "loggers": {
            "uvicorn": {"handlers": ["default"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"level": "INFO"},
            "uvicorn.access": {"handlers": ["access"], "level": "INFO", "propagate": False},
        },
        "root": {"handlers": ["root"], "level": level.upper()},
    }


def banner_printer(log_format: str) -> Callable[[str], None]:
    """``print`` for the text log; under ``--log-format json`` each banner line as a JSON object.

    A log pipeline reading JSON lines must not meet plain text: ``serve``'s
    banner lines become records of logger ``skillrack.serve`` at INFO,
    formatted as every other line is, on stdout where the banner always went.
    Either way a line is masked as a log line is (:func:`remember_secrets`).
    """
    if log_format != "json":
        return lambda line: print(redact(line, _KNOWN_SECRETS))
    formatter = JsonFormatter()

    def say(line: str) -> None:
        text = redact(line.strip(), _KNOWN_SECRETS)
        record = logging.LogRecord("skillrack.serve", logging.INFO, "", 0, text, None, None)
        print(formatter.format(record))

    return say


__all__ = [
    "LOG_FORMATS",
    "TASK_FIELDS",
    "JsonFormatter",
    "SecretFilter",
    "banner_printer",
    "current_trace_ids",
    "log_config",
    "remember_secrets",
]
