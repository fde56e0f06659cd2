"""The one hook-calling helper: pluggy's order, each answer attributed, wrappers refused."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Generator, Iterable
from typing import Any

import pytest
from helpers.builders import registry_of, simple_skill

from skillrack import Skill, hookimpl
from skillrack.errors import StartupError
from skillrack.host.hooks import (
    PER_IMPLEMENTATION_HOOKS,
    call_each,
    call_each_async,
    implementations,
    refuse_wrappers,
)
from skillrack.host.plugins import load_plugins, new_manager
from skillrack.host.registry import collect_declarations
from skillrack.serve.security.authn import RequestCredentials, authenticate
from skillrack.serve.security.authz import AuthorizationRequest, Decision, authorize
from skillrack.serve.security.caller import ANONYMOUS, Caller

# -- plugins whose order is set by pluggy's markers -----------------------------------------------


def authenticator(identity: str, **marks: bool) -> object:
    """An authentication plugin that recognises every request as ``identity``."""

    class Authenticator:
        @hookimpl(**marks)
        def authenticate(self, request: RequestCredentials) -> Caller:
            return Caller(identity=identity, authenticated=True)

    return Authenticator()


def registrar(skill_id: str, **marks: bool) -> object:
    class Registrar:
        @hookimpl(**marks)
        def register_skills(self, register: Callable[[Skill], None]) -> None:
            register(simple_skill(skill_id))

    return Registrar()


def manager_of(plugins: Iterable[tuple[str, object]]) -> Any:
    return load_plugins(use_entry_points=False, extra=plugins).manager


def request_for(skill_id: str = "s") -> AuthorizationRequest:
    return AuthorizationRequest(
        caller=ANONYMOUS,
        skill_id=skill_id,
        skill_version="1.0",
        plugin="vendor",
        authority={"default_mode": "observe_only", "approval_may_be_required": False},
    )


# -- order ----------------------------------------------------------------------------------------


def test_implementations_are_in_pluggys_call_order() -> None:
    manager = manager_of(
        [
            ("first-plain", registrar("a")),
            ("last", registrar("b", trylast=True)),
            ("first", registrar("c", tryfirst=True)),
            ("second-plain", registrar("d")),
        ]
    )
    ours = [impl.plugin_name for impl in implementations(manager, "register_skills")]
    # pluggy: tryfirst first, trylast last, among plain ones the last registered first.
    assert ours == ["first", "second-plain", "first-plain", "last"]
    # And that is the order pluggy itself calls them in, when the hook is called whole.
    called: list[str] = []
    manager.hook.register_skills(register=lambda skill: called.append(skill.id))
    assert called == ["c", "d", "a", "b"]


async def test_a_tryfirst_authentication_plugin_wins_whatever_the_registration_order() -> None:
    for plugins in (
        [("plain", authenticator("plain")), ("eager", authenticator("eager", tryfirst=True))],
        [("eager", authenticator("eager", tryfirst=True)), ("plain", authenticator("plain"))],
    ):
        outcome = await authenticate(manager_of(plugins), RequestCredentials(headers={}))
        assert outcome.caller is not None
        assert outcome.caller.identity == "eager"


async def test_a_trylast_authentication_plugin_loses_whatever_the_registration_order() -> None:
    for plugins in (
        [("late", authenticator("late", trylast=True)), ("plain", authenticator("plain"))],
        [("plain", authenticator("plain")), ("late", authenticator("late", trylast=True))],
    ):
        outcome = await authenticate(manager_of(plugins), RequestCredentials(headers={}))
        assert outcome.caller is not None
        assert outcome.caller.identity == "plain"


async def test_among_plain_authentication_plugins_the_last_registered_wins_as_in_pluggy() -> None:
    manager = manager_of([("older", authenticator("older")), ("newer", authenticator("newer"))])
    outcome = await authenticate(manager, RequestCredentials(headers={}))
    assert outcome.caller is not None and outcome.caller.identity == "newer"
    assert manager.hook.authenticate(request=RequestCredentials(headers={}))[0].identity == "newer"


def test_skills_are_declared_in_pluggys_order() -> None:
    loaded = load_plugins(
        use_entry_points=False,
        extra=[
            ("plain", registrar("p")),
            ("last", registrar("z", trylast=True)),
            ("first", registrar("f", tryfirst=True)),
        ],
    )
    declared = collect_declarations(loaded)
    assert [(plugin, getattr(skill, "id", None)) for plugin, skill in declared] == [
        ("first", "f"),
        ("plain", "p"),
        ("last", "z"),
    ]


def test_a_duplicate_skill_id_names_the_plugin_pluggy_calls_first_as_the_first() -> None:
    with pytest.raises(StartupError) as info:
        registry_of([("late", registrar("same", trylast=True)), ("plain", registrar("same"))])
    assert "declared by plugins 'plain' and 'late'" in str(info.value)


async def test_authorization_opinions_follow_pluggys_order_and_any_deny_still_wins() -> None:
    class Allow:
        @hookimpl(trylast=True)
        def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
            return Decision.allow("fine")

    class Deny:
        @hookimpl(tryfirst=True)
        async def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
            return Decision.deny("no")

    class Broken:
        @hookimpl
        def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
            raise RuntimeError("policy file vanished")

    verdict = await authorize(manager_of([("allow", Allow()), ("deny", Deny())]), request_for())
    assert [plugin for plugin, _ in verdict.opinions] == ["deny", "allow"]
    assert not verdict.allowed and verdict.denied

    verdict = await authorize(manager_of([("allow", Allow()), ("broken", Broken())]), request_for())
    assert [(p, d.allowed if d else None) for p, d in verdict.opinions] == [
        ("broken", False),
        ("allow", True),
    ]
    assert not verdict.allowed and verdict.denied


# -- answers --------------------------------------------------------------------------------------


def test_call_each_attributes_results_and_exceptions() -> None:
    class Fine:
        @hookimpl
        def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
            return Decision.allow()

    class Raises:
        @hookimpl(tryfirst=True)
        def authorize_invocation(self, request: AuthorizationRequest) -> Decision:
            raise ValueError("bad rule")

    manager = manager_of([("fine", Fine()), ("raises", Raises())])
    answers = list(call_each(manager, "authorize_invocation", {"request": request_for()}))
    assert [a.plugin for a in answers] == ["raises", "fine"]
    assert isinstance(answers[0].error, ValueError) and answers[0].result is None
    assert answers[1].result == Decision.allow() and answers[1].error is None


def test_arguments_can_be_made_for_each_plugin() -> None:
    seen: dict[str, list[str]] = {}
    manager = manager_of([("one", registrar("x")), ("two", registrar("y"))])

    def arguments(plugin: str) -> dict[str, object]:
        return {"register": lambda skill: seen.setdefault(plugin, []).append(skill.id)}

    assert [a.error for a in call_each(manager, "register_skills", arguments)] == [None, None]
    assert seen == {"one": ["x"], "two": ["y"]}


def test_an_async_implementation_of_a_synchronous_hook_is_an_error_not_a_silent_no_op() -> None:
    ran: list[str] = []

    class AsyncRegistrar:
        @hookimpl
        async def register_skills(self, register: Callable[[Skill], None]) -> None:
            ran.append("ran")

    manager = manager_of([("async", AsyncRegistrar())])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "coroutine was never awaited" would be a warning
        [answer] = call_each(manager, "register_skills", {"register": print})
    assert isinstance(answer.error, TypeError)
    assert "make it a plain def" in str(answer.error)
    assert ran == []
    registry = registry_of([("async", AsyncRegistrar())])
    assert [f.name for f in registry.failures] == ["async"]
    assert "register_skills raised TypeError" in registry.failures[0].reason


async def test_call_each_async_awaits_and_keeps_order() -> None:
    class Sync:
        @hookimpl
        def authenticate(self, request: RequestCredentials) -> None:
            return None

    class Async:
        @hookimpl(tryfirst=True)
        async def authenticate(self, request: RequestCredentials) -> Caller:
            return Caller("async-one")

    manager = manager_of([("sync", Sync()), ("async", Async())])
    answers = await call_each_async(
        manager, "authenticate", {"request": RequestCredentials(headers={})}
    )
    assert [(a.plugin, a.result) for a in answers] == [
        ("async", Caller("async-one")),
        ("sync", None),
    ]


# -- wrappers -------------------------------------------------------------------------------------


CALLS: list[str] = []


def wrapping_plugin(hook: str, style: str) -> object:
    """A plugin implementing ``hook`` as a wrapper (``wrapper=True`` or ``hookwrapper=True``)."""
    mark = hookimpl(**{style: True})

    class Configuration:
        @mark
        def configure_plugin(self, settings: Any, base_dir: Any) -> Generator[None, Any, Any]:
            CALLS.append(hook)
            return (yield)

    class Registration:
        @mark
        def register_skills(self, register: Any) -> Generator[None, Any, Any]:
            CALLS.append(hook)
            return (yield)

    class Authentication:
        @mark
        def authenticate(self, request: Any) -> Generator[None, Any, Any]:
            CALLS.append(hook)
            return (yield)

    class Authorization:
        @mark
        def authorize_invocation(self, request: Any) -> Generator[None, Any, Any]:
            CALLS.append(hook)
            return (yield)

    class Approval:
        @mark
        def approve_invocation(self, request: Any) -> Generator[None, Any, Any]:
            CALLS.append(hook)
            return (yield)

    class Health:
        @mark
        def check_health(self) -> Generator[None, Any, Any]:
            CALLS.append(hook)
            return (yield)

    plugins: dict[str, type] = {
        "configure_plugin": Configuration,
        "register_skills": Registration,
        "authenticate": Authentication,
        "authorize_invocation": Authorization,
        "approve_invocation": Approval,
        "check_health": Health,
    }
    return plugins[hook]()


@pytest.mark.parametrize("style", ["wrapper", "hookwrapper"])
@pytest.mark.parametrize("hook", PER_IMPLEMENTATION_HOOKS)
def test_a_wrapper_of_a_per_implementation_hook_is_refused_at_load_never_called(
    hook: str, style: str
) -> None:
    CALLS.clear()
    with pytest.raises(StartupError) as info:
        load_plugins(
            use_entry_points=False,
            extra=[("fine", registrar("ok")), ("acme_wrap", wrapping_plugin(hook, style))],
        )
    message = str(info.value)
    assert message.startswith(f"Plugin 'acme_wrap' implements {hook} as a wrapper; ")
    assert "implementation by implementation" in message
    assert "make it a plain hookimpl" in message
    assert "\n" not in message
    assert CALLS == []


async def test_a_wrapper_on_a_hand_built_manager_is_refused_when_called_never_called() -> None:
    CALLS.clear()
    manager = new_manager()
    manager.register(wrapping_plugin("authorize_invocation", "wrapper"), name="acme_wrap")
    with pytest.raises(StartupError, match="Plugin 'acme_wrap' implements authorize_invocation"):
        refuse_wrappers(manager)
    with pytest.raises(StartupError, match="Plugin 'acme_wrap' implements authorize_invocation"):
        await authorize(manager, request_for())
    manager.register(wrapping_plugin("register_skills", "hookwrapper"), name="reg_wrap")
    with pytest.raises(StartupError, match="Plugin 'reg_wrap' implements register_skills"):
        list(call_each(manager, "register_skills", {"register": print}))
    assert CALLS == []


def test_a_wrapper_of_another_hook_is_left_to_pluggy() -> None:
    class SchemesWrapper:
        @hookimpl(wrapper=True)
        def security_schemes(self) -> Generator[None, Any, Any]:
            result = yield
            return result

    manager = manager_of([("schemes", SchemesWrapper())])  # loads: pluggy calls it whole
    assert manager.hook.security_schemes() == []
