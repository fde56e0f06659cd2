"""Fixtures for the host's tests."""

from __future__ import annotations

from typing import Any

import pytest
from helpers.builders import load_json


@pytest.fixture
def vector() -> dict[str, Any]:
    """The draft's describe_skill result for evaluate_resource_condition."""
    return load_json("draft-example-describe-skill-result.json")  # type: ignore[no-any-return]


@pytest.fixture
def draft_document(vector: dict[str, Any]) -> dict[str, Any]:
    return vector["result"]["interface"]  # type: ignore[no-any-return]
