"""The hooks a skillrack plugin can implement.

Plugins implement them with ``@skillrack.hookimpl`` and are found through the
``skillrack`` entry-point group.  Hooks are named by role, as in datasette and
llm: ``register_*`` hooks hand the plugin a callback so that the host checks
every registration in one place and knows which plugin made it.

Evolving a hook means adding arguments, never changing them: pluggy passes an
implementation only the arguments it names, so old plugins keep working.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .authz import AuthorizationRequest, Decision
    from .declare import Skill

PROJECT = "skillrack"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_skills(register: Callable[[Skill], None]) -> None:
    """Declare this plugin's skills by calling ``register(Skill(...))`` once per skill.

    The host attributes every skill to the plugin whose implementation called
    ``register``, assembles and validates its Skill Interface Document, and
    refuses (and reports) a skill that breaks a rule while still loading the
    plugin's other skills.  Two plugins registering the same skill id stop
    start-up: a skill id is the agent's public name.  Return value is ignored.
    """


@hookspec
def authorize_invocation(request: AuthorizationRequest) -> Decision | None:
    """Give an opinion on one invocation: ``Decision.allow()``, ``Decision.deny()`` or ``None``.

    Called before every dispatch of a domain skill, every time (a decision is
    never cached).  ``request`` names the caller, the skill and its version,
    the operation (multi-operation skills), the resources and constraints
    taken from the arguments at the JSON Pointers the skill declares, and the
    skill's advertised authority.  The host combines every plugin's opinion
    with a veto rule: any deny wins, and without at least one allow the call
    is denied.  Implementations may be ``async``.  An implementation that
    raises counts as a deny.
    """
