"""Version Strings: MAJOR.MINOR, no leading zeros, numeric comparison."""

from __future__ import annotations

import pytest

from skillrack.interface.versions import Version, VersionError, is_version


@pytest.mark.parametrize("text", ["0.0", "1.0", "1.10", "10.2", "123456.7"])
def test_canonical_versions(text: str) -> None:
    assert is_version(text)
    assert str(Version.parse(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "01.0",
        "1.00",
        "1.01",
        "1",
        "1.0.0",
        "v1.0",
        " 1.0",
        "1.0 ",
        "-1.0",
        "1.-0",
        "1.a",
        "",
        "\uff11.\uff10",
        "1.0\n",
    ],
)
def test_non_canonical_versions_are_refused(text: str) -> None:
    assert not is_version(text)
    with pytest.raises(VersionError, match="canonical"):
        Version.parse(text)


@pytest.mark.parametrize("value", [1.0, 1, None, ["1.0"]])
def test_non_strings_are_refused(value: object) -> None:
    assert not is_version(value)
    with pytest.raises(VersionError):
        Version.parse(value)


def test_comparison_is_numeric() -> None:
    assert Version.parse("1.10") > Version.parse("1.9")
    assert Version.parse("2.0") > Version.parse("1.99")
    assert Version.parse("1.0") == Version(1, 0)
