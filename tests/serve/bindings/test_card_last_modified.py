"""``Last-Modified`` on the Agent Card, ``If-Modified-Since``, and their agreement with the ETag.

The time is when this version of the card (its ETag) was first published
from the task store, recorded in the store: the same across restarts and
across processes sharing the store, and later for a new version.
``If-None-Match`` takes precedence over ``If-Modified-Since`` (RFC 9110).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path

import httpx
import pytest
from helpers.agent_harness import running_agent

from skillrack.host.config import AgentIdentity, Config
from skillrack.host.registry import Registry
from skillrack.serve.bindings.card import CARD_PATH, CardEndpoint
from skillrack.serve.stores.storage import open_storage, parse_store
from skillrack.testing.serve import free_port


@pytest.fixture(scope="module")
def base(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = Config(base_dir=tmp_path_factory.mktemp("last-modified"))
    with running_agent(registry, config) as url:
        yield url


def _epoch(header: str) -> int:
    return int(parsedate_to_datetime(header).timestamp())


def _get(base: str, **headers: str) -> httpx.Response:
    return httpx.get(base + CARD_PATH, headers=headers, timeout=10)


def test_the_card_has_last_modified_as_an_http_date(base: str) -> None:
    answer = _get(base)
    modified = answer.headers["last-modified"]
    assert modified.endswith(" GMT") and formatdate(_epoch(modified), usegmt=True) == modified
    assert _epoch(modified) <= time.time() + 1


def test_if_modified_since_answers_304_when_not_modified(base: str) -> None:
    first = _get(base)
    modified = first.headers["last-modified"]
    same = _get(base, **{"If-Modified-Since": modified})
    assert same.status_code == 304 and same.content == b""
    assert same.headers["etag"] == first.headers["etag"]
    assert same.headers["last-modified"] == modified
    later = formatdate(_epoch(modified) + 3600, usegmt=True)
    assert _get(base, **{"If-Modified-Since": later}).status_code == 304


def test_if_modified_since_before_the_card_answers_the_card(base: str) -> None:
    first = _get(base)
    earlier = formatdate(_epoch(first.headers["last-modified"]) - 1, usegmt=True)
    answer = _get(base, **{"If-Modified-Since": earlier})
    assert answer.status_code == 200 and answer.content == first.content


def test_the_obsolete_date_forms_are_read_as_gmt(base: str) -> None:
    published = parsedate_to_datetime(_get(base).headers["last-modified"])
    asctime = published.strftime("%a %b %d %H:%M:%S %Y").replace(" 0", "  ", 1)
    rfc850 = published.strftime("%A, %d-%b-%y %H:%M:%S GMT")
    for form in (asctime, rfc850):
        assert _get(base, **{"If-Modified-Since": form}).status_code == 304, form


@pytest.mark.parametrize(
    "value",
    ["garbage", "", "Mon, 99 Foo 2026 99:99:99 GMT", "Mon, 01 Jan 99999999 00:00:00 GMT", "\u00e9"],
)
def test_an_invalid_date_is_ignored(base: str, value: str) -> None:
    answer = httpx.get(base + CARD_PATH, headers={"If-Modified-Since": value.encode()}, timeout=10)
    assert answer.status_code == 200 and answer.json()["name"]


def test_if_none_match_takes_precedence_over_if_modified_since(base: str) -> None:
    first = _get(base)
    modified, etag = first.headers["last-modified"], first.headers["etag"]
    # The date alone would say "not modified"; the ETag does not match: the card.
    stale = _get(base, **{"If-None-Match": '"other"', "If-Modified-Since": modified})
    assert stale.status_code == 200 and stale.content == first.content
    # The ETag matches; a date before the card is ignored.
    earlier = formatdate(_epoch(modified) - 3600, usegmt=True)
    fresh = _get(base, **{"If-None-Match": etag, "If-Modified-Since": earlier})
    assert fresh.status_code == 304


def _card_headers(registry: Registry, config: Config, port: int) -> tuple[str, str]:
    with running_agent(registry, config, port=port) as url:
        answer = _get(url)
    return answer.headers["etag"], answer.headers["last-modified"]


def test_last_modified_survives_a_restart_and_moves_with_a_new_version(
    registry: Registry, tmp_path: Path
) -> None:
    config, port = Config(base_dir=tmp_path), free_port()  # the URLs on the card stay the same
    etag, modified = _card_headers(registry, config, port)
    time.sleep(1.1)  # a new time would show in whole seconds
    assert _card_headers(registry, config, port) == (etag, modified)
    renamed = Config(base_dir=tmp_path, agent=AgentIdentity(name="renamed agent"))
    new_etag, new_modified = _card_headers(registry, renamed, port)
    assert new_etag != etag and _epoch(new_modified) > _epoch(modified)


def test_processes_sharing_a_store_agree_on_the_time(tmp_path: Path) -> None:
    """Two cluster-mode stores on one SQLite file: the first recorded time wins for both."""
    spec = parse_store("sqlite:///tasks.db", tmp_path)

    async def run() -> list[int]:
        first = open_storage(spec, owner_resolver=lambda context: "", cluster=True)
        second = open_storage(spec, owner_resolver=lambda context: "", cluster=True)
        try:
            await first.start()
            await second.start()
            return [
                await first.first_published('"v1"', 1_000),
                await second.first_published('"v1"', 2_000),
                await second.first_published('"v2"', 3_000),
                await first.first_published('"v2"', 4_000),
            ]
        finally:
            await first.close()
            await second.close()

    assert asyncio.run(run()) == [1_000, 1_000, 3_000, 3_000]


def test_the_memory_store_uses_the_time_of_the_card(tmp_path: Path) -> None:
    storage = open_storage(parse_store("memory", tmp_path), owner_resolver=lambda context: "")
    assert asyncio.run(storage.first_published('"v1"', 1_234)) == 1_234


def test_last_modified_is_formatted_once_and_follows_a_new_published_time() -> None:
    """The HTTP-date is kept between requests, and start-up's recorded time replaces it."""
    endpoint = CardEndpoint(b"{}", '"v1"', "public, max-age=60", published=1_000)
    first = endpoint.last_modified()
    assert first == formatdate(1_000, usegmt=True)
    assert endpoint.last_modified() is first  # not formatted again per request
    endpoint.published = 2_000  # what start-up does with the store's time
    assert endpoint.last_modified() == formatdate(2_000, usegmt=True)
