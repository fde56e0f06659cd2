"""The API plugins live on: ``skillrack`` and ``skillrack.testing``, and nothing else.

A vendor copies what the example vendor plugin and ``skillrack new`` do, so if
they reach into ``skillrack.serve.security.authz`` a vendor will too, and
every move inside the package breaks someone's plugin.  These tests read the
imports of the first-party plugins, the example vendor plugin (source and
tests) and the scaffold templates, and pin the two public namespaces, so that
growing the API is a decision made in a diff of this file.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import skillrack
import skillrack.testing

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_MODULES = {"skillrack", "skillrack.testing"}

#: Where plugins live: every .py file under these, tests included (``plugins/`` holds the
#: first-party plugins and the separate distributions such as ``plugins/linux``).
PLUGIN_TREES = (ROOT / "plugins", ROOT / "example_vendor_plugin")
#: Vendor distributions that must be among the files checked (a vendor's whole package).
VENDOR_DISTRIBUTIONS = (ROOT / "example_vendor_plugin", ROOT / "plugins" / "linux")
#: What ``skillrack new`` writes into a vendor's new project.
TEMPLATES = ROOT / "core" / "skillrack" / "ops" / "templates"
PLACEHOLDER = re.compile(r"\{\{\s*\w+\s*\}\}")
#: A placeholder that is a whole line (a generated keyword argument, or none).
PLACEHOLDER_LINE = re.compile(r"^[ \t]*\{\{\s*\w+\s*\}\}[ \t]*$", re.MULTILINE)

#: The contract, written out by hand on purpose: the modules derive their ``__all__``
#: (from their lazy tables), so this is the one list a new public name must be added to
#: besides its definition's import, and adding it is a decision visible in review.
SKILLRACK_ALL = [
    "AddressGuard",
    "AddressPolicy",
    "Approved",
    "AuthenticationFailed",
    "Authority",
    "AuthorizationRequest",
    "BaseSkill",
    "BaseSkillContext",
    "Caller",
    "ClientCertificate",
    "ClientCode",
    "ConditionError",
    "ConfigError",
    "DataPart",
    "Decision",
    "DomainSchema",
    "ErrorCode",
    "FilePart",
    "HealthFinding",
    "HopLog",
    "IncomingMessage",
    "InputDeadlinePassed",
    "InputRequired",
    "Interaction",
    "JsonObject",
    "JsonValue",
    "Operation",
    "ProtocolCode",
    "ProtocolError",
    "RequestCredentials",
    "Skill",
    "SkillCallError",
    "SkillClient",
    "SkillContext",
    "SkillResult",
    "SkillrackError",
    "SupportingRecord",
    "TextPart",
    "compose",
    "hookimpl",
    "refuse_unknown_keys",
]

TESTING_ALL = [
    "Agent",
    "AgentClient",
    "CARD_PATH",
    "EXTENSION_URI",
    "ExampleProblem",
    "InterfaceError",
    "ReleaseReport",
    "VerifiedInterface",
    "assemble",
    "assert_skill_examples",
    "check_examples",
    "check_release",
    "compile_inline_schema",
    "digest_of",
    "error_of",
    "invoke",
    "message",
    "pytest_addoption",
    "pytest_configure",
    "registry_problems",
    "registry_under_test",
    "rpc",
    "send",
    "skill_request",
    "skillrack_command",
    "skillrack_config",
    "skillrack_distributions",
    "skillrack_live_agent",
    "skillrack_plugin_objects",
    "skillrack_plugin_settings",
    "skillrack_registry",
    "stream",
    "subprocess_agent",
    "task_of",
    "wait_for_state",
    "write_bundle",
]


def plugin_sources() -> list[tuple[Path, str]]:
    """Every Python file a plugin author writes or copies, with its text as Python."""
    found = [
        (path, path.read_text(encoding="utf-8"))
        for tree in PLUGIN_TREES
        for path in sorted(tree.rglob("*.py"))
        if not {"build", ".tox", ".venv"} & set(path.relative_to(tree).parts)
    ]
    found += [
        (
            path,
            PLACEHOLDER.sub(
                "placeholder", PLACEHOLDER_LINE.sub("", path.read_text(encoding="utf-8"))
            ),
        )
        for path in sorted(TEMPLATES.rglob("*.py.tmpl"))
    ]
    return found


def skillrack_imports(source: str, filename: str) -> list[tuple[int, str]]:
    """(line, module) of every import of ``skillrack`` or below, at any depth of the file.

    ``from skillrack import serve`` would reach a submodule by attribute, so a
    name imported from ``skillrack`` or ``skillrack.testing`` that is a
    submodule counts as that submodule.
    """
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules = [node.module]
            if node.module in PUBLIC_MODULES:
                modules += [
                    f"{node.module}.{alias.name}"
                    for alias in node.names
                    if _is_submodule(f"{node.module}.{alias.name}")
                ]
        else:
            continue
        found += [
            (node.lineno, module)
            for module in modules
            if module == "skillrack" or module.startswith("skillrack.")
        ]
    return found


def _is_submodule(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def test_plugins_import_only_the_public_api() -> None:
    sources = plugin_sources()
    assert len(sources) > 20, "the plugin trees were not found"
    offending = [
        f"{path.relative_to(ROOT)}:{line}: {module}"
        for path, text in sources
        for line, module in skillrack_imports(text, str(path))
        if module not in PUBLIC_MODULES
    ]
    assert offending == [], "import these from skillrack or skillrack.testing:\n" + "\n".join(
        offending
    )


@pytest.mark.parametrize("tree", VENDOR_DISTRIBUTIONS, ids=lambda p: p.name)
def test_every_vendor_distribution_is_checked(tree: Path) -> None:
    """Its sources and its tests are among what the import rule reads."""
    checked = {path for path, _ in plugin_sources()}
    for part in ("src", "tests"):
        files = set((tree / part).rglob("*.py"))
        assert files and files <= checked, f"{tree / part} is not checked"


def test_the_import_reader_sees_every_form() -> None:
    source = (
        "import skillrack\n"
        "import skillrack.host.config as config\n"
        "from skillrack.serve.execution.skill_context import Caller\n"
        "from skillrack.testing import serve\n"
        "def f():\n"
        "    from skillrack.errors import ErrorCode\n"
        "    import skillrack.testing\n"
        "from skillrack_plugins import api_keys\n"
    )
    assert skillrack_imports(source, "example.py") == [
        (1, "skillrack"),
        (2, "skillrack.host.config"),
        (3, "skillrack.serve.execution.skill_context"),
        (4, "skillrack.testing"),
        (4, "skillrack.testing.serve"),
        (6, "skillrack.errors"),
        (7, "skillrack.testing"),
    ]


@pytest.mark.parametrize(
    ("module", "expected"),
    [(skillrack, SKILLRACK_ALL), (skillrack.testing, TESTING_ALL)],
    ids=["skillrack", "skillrack.testing"],
)
def test_exported_members(module: object, expected: list[str]) -> None:
    assert expected == sorted(expected)
    assert list(getattr(module, "__all__", [])) == expected
    exported: list[str] = getattr(module, "__all__", [])
    for name in exported:
        value = getattr(module, name)
        assert value is not None, name


def test_names_imported_on_first_use_are_the_type_checkers_names() -> None:
    """The lazy table and the ``TYPE_CHECKING`` imports must name the same definitions."""
    for module in (skillrack, skillrack.testing):
        table: dict[str, str] = vars(module)["_ON_FIRST_USE"]
        assert set(table) <= set(module.__all__)
        tree = ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8"))
        type_only = {
            alias.asname or alias.name: node.module
            for statement in tree.body
            if isinstance(statement, ast.If) and ast.unparse(statement.test) == "TYPE_CHECKING"
            for node in statement.body
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        assert type_only == table
        for name, source in table.items():
            assert getattr(module, name) is getattr(importlib.import_module(source), name)


def test_dir_lists_the_names_not_yet_imported() -> None:
    """``dir()`` (completion, ``help()``) sees every public name before its first use.

    Run in a fresh interpreter: in this one, the tests above loaded them all.
    """
    import json
    import subprocess
    import sys

    probe = (
        "import json, skillrack, skillrack.testing\n"
        "lazy = {m.__name__: sorted(set(vars(m)['_ON_FIRST_USE']) - set(vars(m)))\n"
        "        for m in (skillrack, skillrack.testing)}\n"
        "print(json.dumps({'lazy': lazy, 'dir': {m.__name__: dir(m)\n"
        "                  for m in (skillrack, skillrack.testing)}}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    seen = json.loads(result.stdout)
    for module, expected in (("skillrack", SKILLRACK_ALL), ("skillrack.testing", TESTING_ALL)):
        # Names still unloaded when dir() ran: the test is about them, so there must be some.
        assert seen["lazy"][module], module
        assert set(expected) <= set(seen["dir"][module]), module
        assert seen["dir"][module] == sorted(seen["dir"][module])


def test_importing_the_public_api_stays_light() -> None:
    """``import skillrack`` runs before any submodule and in every pytest session: no A2A stack."""
    import subprocess
    import sys

    probe = (
        "import sys, skillrack, skillrack.testing\n"
        "heavy = ('a2a', 'starlette', 'httpx', 'sqlalchemy', 'jsonschema', 'uvicorn')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"
