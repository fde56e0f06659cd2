"""The Markdown template of ``skillrack spec``: each kind of block, written as Markdown spells it.

The expected text is written out by hand here (not produced by the code under
test), so a change of the template that moves a blank line or drops an escape
shows up as a difference from what a Markdown reader expects.
"""

from __future__ import annotations

from importlib import resources

from skillrack.ops.spec_document import TEMPLATE, TEMPLATES, Section, Spec
from skillrack.ops.spec_evidence import Evidence


def spec_of(*sections: Section) -> Spec:
    return Spec("Title", list(sections), {}, b"{}", [], [], Evidence(card_bytes=b"{}"))


def test_every_block_kind_is_markdown() -> None:
    first = (
        Section("1. First")
        .text("A paragraph with `code`.")
        .table(["Name", "Value"], [["a|b", True], ["multi\n  line", None], ["obj", {"k": [1]}]])
        .items(["one", "two"])
    )
    empty = Section("Empty", 3)
    code = Section("Code", 3).code("json", '{\n  "a": 1\n}\n\n').text("After.")
    assert spec_of(first, empty, code).markdown() == (
        "# Title\n"
        "\n"
        "## 1. First\n"
        "\n"
        "A paragraph with `code`.\n"
        "\n"
        "| Name | Value |\n"
        "|---|---|\n"
        "| a\\|b | true |\n"
        "| multi line |  |\n"
        '| obj | {"k": [1]} |\n'
        "\n"
        "- one\n"
        "- two\n"
        "\n"
        "### Empty\n"
        "\n"
        "### Code\n"
        "\n"
        "```json\n"
        "{\n"
        '  "a": 1\n'
        "}\n"
        "```\n"
        "\n"
        "After.\n"
    )


def test_a_document_ends_with_one_newline() -> None:
    assert spec_of().markdown() == "# Title\n"
    assert (
        spec_of(Section("Last").text("Trailing spaces   "))
        .markdown()
        .endswith("\n\nTrailing spaces\n")
    )


def test_the_template_is_package_data() -> None:
    """Found through importlib.resources, as in a wheel (``tool.hatch`` ships ops/ whole)."""
    template = resources.files("skillrack.ops").joinpath(*TEMPLATES.split("/"), TEMPLATE)
    assert template.is_file()
    assert "{%- macro row(cells) -%}" in template.read_text(encoding="utf-8")
