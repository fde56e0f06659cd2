"""A peer's `allow_loopback` / `allow_private` in `[peers]`: read, and refused when wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillrack.host.config import ConfigError, PeerAddresses, load_config


def config_of(tmp_path: Path, peers: str) -> Path:
    path = tmp_path / "skillrack.toml"
    path.write_text("[peers]\n" + peers)
    return path


def test_a_peer_table_allows_ranges(tmp_path: Path) -> None:
    config = load_config(
        config_of(
            tmp_path,
            'observer = "http://127.0.0.1:8001"\n'
            'lab = { url = "http://lab.internal:8000", allow_private = true }\n'
            'box = { url = "http://box.internal:8000", allow_loopback = true, '
            "allow_private = false }\n",
        )
    )
    assert config.peers["lab"] == "http://lab.internal:8000"
    assert config.peer_addresses == {
        "lab": PeerAddresses(allow_private=True),
        "box": PeerAddresses(allow_loopback=True),
    }


@pytest.mark.parametrize(
    ("peers", "fragment"),
    [
        ('lab = { url = "http://lab:1", allow_private = "yes" }\n', "peers.lab.allow_private"),
        ('lab = { url = "http://lab:1", allow_loopback = 1 }\n', "true or false"),
        ('lab = { url = "http://lab:1", allow_everything = true }\n', "allow_everything"),
    ],
)
def test_a_wrong_setting_names_the_key(tmp_path: Path, peers: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        load_config(config_of(tmp_path, peers))
