"""The console's routes: who may read them, and how each page is built.

Every page answers only what :class:`~skillrack.serve.security.operator_access.OperatorGuard`
allows the operations endpoints: with authentication configured, a caller
holding the ``operator`` role, and only its own tenant's tasks and approvals;
without authentication (a development agent), loopback clients only.  The
caller is the one the authentication gate found in the request's headers or
client certificate, else the one the console's signed session cookie names
(:mod:`skillrack.serve.console.session`; unless signed out, which every
replica sees: :mod:`skillrack.serve.console.revocations`); a GET with neither is sent to the
sign-in page (:mod:`skillrack.serve.console.signin`), a POST gets a 401 page.
A refusal is an HTML page with status 403.  Grant and Deny are form POSTs
carrying a CSRF token bound to the session (:mod:`skillrack.serve.console.csrf`)
and a reason; the deciding operator's identity, roles and reason are checked
and recorded by the approvals store (separation of duties: the identity that
asked cannot decide; see :mod:`skillrack.serve.security.approvals`).  The
Approvals page shows at most :data:`APPROVAL_PAGE_SIZE` waiting and as many
decided approvals per page, so that a caller parking many approvals cannot
make it slow.
"""

from __future__ import annotations

import functools
import importlib.metadata
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from a2a.server.cluster import VersionedTaskStore
from a2a.server.cluster.task_store import StoredTask
from a2a.server.context import ServerCallContext
from a2a.server.tasks import TaskStore
from a2a.types import AgentCard, ListTasksRequest, Task, TaskState
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from skillrack.host.config import Config, redact_url
from skillrack.host.registry import Registry
from skillrack.host.secrets import mask_values, secret_values
from skillrack.interface.document import DESCRIBE_SKILL
from skillrack.serve.console import csrf
from skillrack.serve.console.health import HealthCheck, allows_everything, health_checks
from skillrack.serve.console.oidc_flow import CodeFlow
from skillrack.serve.console.session import Session, Sessions
from skillrack.serve.console.signin import SignIn
from skillrack.serve.console.views import (
    ApprovalView,
    TaskSummary,
    approval_view,
    artifacts,
    messages,
    plugin_rows,
    result_of,
    settings_rows,
    skill_view,
    state_name,
    summarize,
)
from skillrack.serve.middleware.authentication import Authenticator
from skillrack.serve.scope import CALLER_KEY
from skillrack.serve.security.approvals import (
    DENIED,
    GRANTED,
    PENDING,
    Approval,
    Approvals,
    Decider,
    DecisionRefused,
    UnknownApproval,
)
from skillrack.serve.security.caller import ANONYMOUS, Caller, auth_scheme, owner_of
from skillrack.serve.security.operator_access import (
    OPERATOR_ROLE,
    OperatorGuard,
    RecordedHop,
    roles_of,
)

if TYPE_CHECKING:
    import jinja2

#: Where the console is served.
CONSOLE_PATH = "/-/console"
#: Tasks one page of the Tasks view lists at most (the most recently updated first).
TASK_PAGE_SIZE = 100
#: Store pages of that size the Tasks view reads at most to fill one filtered page.
TASK_PAGES_READ = 5
#: Waiting (and, separately, decided) approvals one page of the Approvals view shows at most.
APPROVAL_PAGE_SIZE = 25
#: Characters of a decision's reason the console accepts.
MAX_REASON_CHARS = 500
#: The task states the Tasks page filters by.
STATE_FILTERS = (
    TaskState.TASK_STATE_SUBMITTED,
    TaskState.TASK_STATE_WORKING,
    TaskState.TASK_STATE_INPUT_REQUIRED,
    TaskState.TASK_STATE_AUTH_REQUIRED,
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
)
#: The same, by the name the page and its ``state`` query parameter use.
_STATES_BY_NAME = {state_name(s): s for s in STATE_FILTERS}


@functools.cache
def _templates() -> jinja2.Environment:
    """The templates, autoescaped; made (and jinja2 imported) at the first page, not at start-up."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("skillrack.serve.console", "templates"),
        autoescape=jinja2.select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


@functools.cache
def _version() -> str:
    """skillrack's installed version, read at the first page (metadata reads cost start-up)."""
    try:
        return importlib.metadata.version("skillrack")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source checkout
        return "unknown"


@dataclass
class ConsoleSources:
    """What the console reads: the agent's own objects, built once in ``build_server``."""

    registry: Registry
    config: Config
    card: AgentCard
    signer_kid: str | None
    store: str
    task_store: TaskStore | VersionedTaskStore
    approvals: Approvals | None
    guard: OperatorGuard
    hops: Callable[[], Sequence[RecordedHop]]
    #: The session cookies, keyed by the server secret (:mod:`skillrack.serve.console.session`).
    sessions: Sessions
    #: The authentication plugins, as the bindings ask them (sign-in checks credentials so).
    authenticator: Authenticator
    #: The agent's public URL: the OpenID Connect redirect URI is under it.
    base_url: str
    #: ``[plugins.oidc.console]``'s sign-in flow, or ``None``.
    oidc: CodeFlow | None = None


class Console:
    """The console's pages; :meth:`routes` lists them for the app."""

    def __init__(self, sources: ConsoleSources) -> None:
        self.sources = sources
        self.signin = SignIn(
            base=CONSOLE_PATH,
            base_url=sources.base_url,
            sessions=sources.sessions,
            authenticator=sources.authenticator,
            guard=sources.guard,
            oidc=sources.oidc,
        )
        #: The configuration's secrets, masked on every page whatever a template shows.
        self._secrets = secret_values(sources.config)

    def routes(self) -> list[Route]:
        base = CONSOLE_PATH
        return [
            Route(base, self.overview, methods=["GET"]),
            Route(base + "/skills", self.skills, methods=["GET"]),
            Route(base + "/skills/{skill_id}", self.skill, methods=["GET"]),
            Route(base + "/skills/{skill_id}/interface.json", self.interface, methods=["GET"]),
            Route(base + "/tasks", self.tasks, methods=["GET"]),
            Route(base + "/tasks/{task_id}", self.task, methods=["GET"]),
            Route(base + "/approvals", self.approvals, methods=["GET"]),
            Route(base + "/approvals/{approval_id}", self.decide, methods=["GET", "POST"]),
            Route(base + "/signin", self.sign_in, methods=["GET", "POST"]),
            Route(base + "/signin/oidc", self.sign_in_oidc, methods=["GET"]),
            Route(base + "/signin/callback", self.sign_in_callback, methods=["GET"]),
            Route(base + "/signout", self.sign_out, methods=["POST"]),
        ]

    # -- rendering -------------------------------------------------------------------------------

    def _render(
        self, request: Request, template: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        session = self.sources.sessions.read(request)
        if session is not None:
            binding, new = session.sid, False
        else:
            binding, new = csrf.visitor_id(request)
        token = csrf.token(self.sources.sessions.secret, binding, csrf.who(self._caller(request)))
        html = (
            _templates()
            .get_template(template)
            .render(
                base=CONSOLE_PATH,
                agent=self.sources.config.agent,
                version=_version(),
                csrf_field=csrf.FIELD,
                csrf_token=token,
                signed_in=session.caller if session is not None else None,
                **values,
            )
        )
        html = mask_values(html, self._secrets)
        response = HTMLResponse(html, status_code=status, headers=_SECURITY_HEADERS)
        if new:
            secure = request.url.scheme == "https"
            csrf.set_cookie(response, binding, path=CONSOLE_PATH, secure=secure)
        return response

    def _expected_token(self, request: Request) -> str | None:
        """The CSRF token a POST of this request's session (or visitor) and caller must carry."""
        session = self.sources.sessions.read(request)
        if session is not None:
            binding = session.sid
        else:
            binding, new = csrf.visitor_id(request)
            if new:
                return None
        return csrf.token(self.sources.sessions.secret, binding, csrf.who(self._caller(request)))

    async def _session(self, request: Request) -> Session | None:
        """The signed-in session, whose caller the request then has (unless headers named one).

        A signed-out session (revoked, its cookie copied before sign-out) is none.
        """
        session = await self.sources.sessions.current(request)
        if session is not None and CALLER_KEY not in request.scope:
            request.scope[CALLER_KEY] = session.caller
        return session

    async def _refusal(self, request: Request) -> Response | None:
        """``None`` when the request may see the console; else the sign-in, or a 401 or 403 page."""
        await self._session(request)
        if CALLER_KEY not in request.scope:  # no credentials, no session: sign in first
            if request.method == "GET":
                target = urllib.parse.quote(request.url.path, safe="/")
                return RedirectResponse(f"{CONSOLE_PATH}/signin?next={target}", status_code=303)
            return self._page_error(
                request, 401, "Sign in first", "your session has ended; sign in again"
            )
        reason = self.sources.guard.refusal_reason(request)
        if reason is None:
            return None
        return self._page_error(request, 403, "Not allowed", reason)

    def _page_error(self, request: Request, status: int, title: str, reason: str) -> HTMLResponse:
        return self._render(request, "error.html", status, title=title, reason=reason, page="")

    def _no_such_skill(self, request: Request) -> HTMLResponse:
        return self._page_error(
            request, 404, "No such skill", "this agent advertises no skill with that id"
        )

    @staticmethod
    def _caller(request: Request) -> Caller:
        caller = request.scope.get(CALLER_KEY, ANONYMOUS)
        return caller if isinstance(caller, Caller) else ANONYMOUS

    def _context(self, caller: Caller) -> ServerCallContext:
        return ServerCallContext(state={CALLER_KEY: caller})

    # -- pages -----------------------------------------------------------------------------------

    async def overview(self, request: Request) -> Response:
        if (refused := await self._refusal(request)) is not None:
            return refused
        sources = self.sources
        card = sources.card
        return self._render(
            request,
            "overview.html",
            page="overview",
            allow_all=allows_everything(sources.registry),
            health=await self._health(request),
            card=card,
            bindings=[
                (i.protocol_binding, i.url, i.protocol_version) for i in card.supported_interfaces
            ],
            signer_kid=sources.signer_kid,
            store=sources.store,
            approvals_store=sources.approvals.where if sources.approvals else "",
            # The store values are shown above, a PostgreSQL password hidden; any other URL
            # (limits_store's Redis) is shown without its password.
            server_limits=[
                (name, redact_url(value))
                for name, value in settings_rows(sources.config.server)
                if name not in ("store", "approvals_store")
            ],
            interface_limits=settings_rows(sources.registry.limits),
            plugins=plugin_rows(sources.registry),
            refused=list(sources.registry.refused),
            failures=list(sources.registry.failures),
            skill_count=len(sources.registry.skills),
        )

    async def _health(self, request: Request) -> list[HealthCheck]:
        sources = self.sources
        return await health_checks(
            sources.task_store,
            sources.approvals,
            sources.registry,
            context=self._context(self._caller(request)),
            visible=lambda approval: self._visible(request, approval),
            authentication=sources.guard.authentication_configured,
        )

    async def skills(self, request: Request) -> Response:
        if (refused := await self._refusal(request)) is not None:
            return refused
        return self._render(
            request,
            "skills.html",
            page="skills",
            skills=list(self.sources.registry),
            base_skills=list(self.sources.registry.base_skills.values()),
        )

    async def skill(self, request: Request) -> Response:
        if (refused := await self._refusal(request)) is not None:
            return refused
        skill = self.sources.registry.get(request.path_params["skill_id"])
        if skill is None:
            return self._no_such_skill(request)
        return self._render(request, "skill.html", page="skills", view=skill_view(skill))

    async def interface(self, request: Request) -> Response:
        """The raw Skill Interface Document, as ``describe_skill`` returns it."""
        if (refused := await self._refusal(request)) is not None:
            return refused
        skill = self.sources.registry.get(request.path_params["skill_id"])
        if skill is None:
            return self._no_such_skill(request)
        return JSONResponse(
            {"interface_digest": skill.interface_digest, "interface": skill.interface.document}
        )

    async def tasks(self, request: Request) -> Response:
        if (refused := await self._refusal(request)) is not None:
            return refused
        state_filter = request.query_params.get("state", "")
        skill_filter = request.query_params.get("skill", "")
        params = ListTasksRequest(page_size=TASK_PAGE_SIZE, history_length=0)
        if state_filter:
            if state_filter not in _STATES_BY_NAME:
                return self._page_error(
                    request,
                    400,
                    "Unknown state",
                    f"state must be one of {', '.join(_STATES_BY_NAME)}",
                )
            params.status = _STATES_BY_NAME[state_filter]
        # describe_skill tasks are clients reading interfaces, not work: hidden unless asked for.
        show_describe = request.query_params.get("describe") == "shown"
        hide_describe = not show_describe and skill_filter != DESCRIBE_SKILL
        context = self._context(self._caller(request))
        rows: list[TaskSummary] = []
        hidden = total = 0
        for _ in range(TASK_PAGES_READ):  # filtered rows may take more than one store page
            listed = await self.sources.task_store.list(params, context)
            total = total or listed.total_size
            for row in (summarize(task) for task in listed.tasks):
                if hide_describe and row.skill == DESCRIBE_SKILL:
                    hidden += 1
                elif not skill_filter or row.skill == skill_filter:
                    rows.append(row)
            if len(rows) >= TASK_PAGE_SIZE or not listed.next_page_token:
                break
            params.page_token = listed.next_page_token
        rows = rows[:TASK_PAGE_SIZE]
        return self._render(
            request,
            "tasks.html",
            page="tasks",
            rows=rows,
            states=list(_STATES_BY_NAME),
            skills=[s.skill_id for s in self.sources.registry] + [DESCRIBE_SKILL],
            state_filter=state_filter,
            skill_filter=skill_filter,
            show_describe=show_describe,
            hidden_describe=hidden,
            total=total,
            page_size=TASK_PAGE_SIZE,
        )

    async def task(self, request: Request) -> Response:
        if (refused := await self._refusal(request)) is not None:
            return refused
        task_id = request.path_params["task_id"]
        task = await self.sources.task_store.get(task_id, self._context(self._caller(request)))
        if task is None:
            return self._page_error(
                request, 404, "No such task", "no task of yours has that id in the task store"
            )
        task = _task_of(task)
        summary = summarize(task)
        registered = self.sources.registry.get(summary.skill) if summary.skill else None
        sensitive = list(registered.skill.sensitive) if registered is not None else [""]
        owner = self.sources.guard.owner(request)
        hops = [
            shown
            for hop in self.sources.hops()
            if (owner is None or hop.owner == owner)
            and (shown := hop.to_json()).get("upstream_task_id") == task.id
        ]
        store = self.sources.approvals
        task_approvals = (
            [a for a in await store.alist() if a.task_id == task.id and self._visible(request, a)]
            if store is not None
            else []
        )
        return self._render(
            request,
            "task.html",
            page="tasks",
            summary=summary,
            messages=messages(task, sensitive),
            result=result_of(task),
            artifacts=artifacts(task),
            approvals=task_approvals,
            hops=hops,
            known_skill=registered is not None,
        )

    async def approvals(self, request: Request) -> Response:
        if (refused := await self._refusal(request)) is not None:
            return refused
        store = self.sources.approvals
        everything = await store.alist() if store is not None else []
        visible = [a for a in everything if self._visible(request, a)]
        waiting = [a for a in visible if a.state == PENDING]
        settled = [a for a in reversed(visible) if a.state != PENDING]
        page = _page_number(request.query_params.get("page", ""))
        pages = max(1, -(-max(len(waiting), len(settled)) // APPROVAL_PAGE_SIZE))
        page = min(page, pages)
        shown = slice((page - 1) * APPROVAL_PAGE_SIZE, page * APPROVAL_PAGE_SIZE)
        # Views (a task store read each) only for the rows this page shows.
        pending = [await self._view(a) for a in waiting[shown]]
        return self._render(
            request,
            "approvals.html",
            page="approvals",
            has_store=store is not None,
            pending=pending,
            decided=settled[shown],
            waiting_total=len(waiting),
            decided_total=len(settled),
            page_number=page,
            pages=pages,
            page_size=APPROVAL_PAGE_SIZE,
            max_reason=MAX_REASON_CHARS,
            notice=request.query_params.get("decided", ""),
        )

    async def decide(self, request: Request) -> Response:
        """POST: grant or deny (the form's ``decision``); GET: back to the Approvals page."""
        if (refused := await self._refusal(request)) is not None:
            return refused
        if request.method == "GET":
            return RedirectResponse(f"{CONSOLE_PATH}/approvals", status_code=303)
        form = await self._checked_form(request)
        if isinstance(form, Response):
            return form
        decision = form.get("decision")
        if decision not in ("grant", "deny"):
            return self._page_error(
                request, 400, "Unknown decision", "decision must be grant or deny"
            )
        store = self.sources.approvals
        approval_id = request.path_params["approval_id"]
        approval = await self._approval(request, approval_id)
        if store is None or approval is None:
            return self._page_error(
                request, 404, "No such approval", f"no approval of yours has the id {approval_id!r}"
            )
        reason = " ".join(form.get("reason", "").split())
        if not reason or len(reason) > MAX_REASON_CHARS:
            return self._page_error(
                request,
                400,
                "Reason required",
                f"every decision needs a reason of 1 to {MAX_REASON_CHARS} characters",
            )
        by = _decider(self._caller(request), request)
        try:
            decided = await store.adecide(
                approval_id, granted=decision == "grant", by=by, reason=reason
            )
        except UnknownApproval:  # pragma: no cover - listed a moment ago
            return self._page_error(
                request, 404, "No such approval", f"no approval has the id {approval_id!r}"
            )
        except DecisionRefused as refusal:
            return self._page_error(request, 403, "Decision refused", str(refusal))
        wanted = GRANTED if decision == "grant" else DENIED
        if decided.state not in (wanted, PENDING) or not decided.decisions:
            return self._page_error(
                request,
                409,
                "Already decided",
                f"approval {approval_id} was already {decided.state}"
                + (f" by {decided.decided_by}" if decided.decided_by else ""),
            )
        return RedirectResponse(f"{CONSOLE_PATH}/approvals?decided={approval_id}", status_code=303)

    # -- signing in and out ----------------------------------------------------------------------

    async def sign_in(self, request: Request) -> Response:
        """GET: the sign-in page; POST: the API key form."""
        await self._session(request)
        if request.method == "GET":
            return self.signin.page(
                request,
                self._render,
                signed_out=bool(request.query_params.get("signed_out")),
            )
        form = await self._checked_form(request)
        if isinstance(form, Response):
            return form
        return await self.signin.with_key(request, form, self._render)

    async def sign_in_oidc(self, request: Request) -> Response:
        await self._session(request)
        return await self.signin.start_oidc(request, self._render)

    async def sign_in_callback(self, request: Request) -> Response:
        await self._session(request)
        return await self.signin.callback(request, self._render)

    async def sign_out(self, request: Request) -> Response:
        await self._session(request)
        form = await self._checked_form(request)
        if isinstance(form, Response):
            return form
        return await self.signin.sign_out(request)

    async def _checked_form(self, request: Request) -> dict[str, str] | Response:
        """A POSTed console form whose CSRF token matches, or the error page saying why not."""
        if not _is_form(request):
            return self._page_error(
                request,
                415,
                "Not a form",
                "the console accepts application/x-www-form-urlencoded forms only",
            )
        form = await _form(request)
        if form is None:
            return self._page_error(
                request,
                400,
                "Malformed form",
                f"the form must be ASCII with at most {_MAX_FORM_FIELDS} fields",
            )
        problem = csrf.refusal(request, form.get(csrf.FIELD), self._expected_token(request))
        if problem is not None:
            return self._page_error(request, 403, "Form refused", problem)
        return form

    # -- approvals helpers -------------------------------------------------------------------------

    def _visible(self, request: Request, approval: Approval) -> bool:
        owner = self.sources.guard.owner(request)
        return owner is None or owner == _owner_of_approval(approval)

    async def _approval(self, request: Request, approval_id: str) -> Approval | None:
        store = self.sources.approvals
        if store is None:
            return None
        found = [a for a in await store.alist() if a.id == approval_id]
        if not found or not self._visible(request, found[0]):
            return None
        return found[0]

    async def _view(self, approval: Approval) -> ApprovalView:
        caller = Caller(identity=approval.caller, tenant=approval.tenant)
        task = await self.sources.task_store.get(approval.task_id, self._context(caller))
        skill = self.sources.registry.get(approval.skill_id)
        return approval_view(approval, skill, _task_of(task) if task is not None else None)


#: Fields a console form may carry (Grant and Deny send two).
_MAX_FORM_FIELDS = 16


def _is_form(request: Request) -> bool:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return content_type == "application/x-www-form-urlencoded"


async def _form(request: Request) -> dict[str, str] | None:
    """An urlencoded form's fields (the first value of each); ``None`` when malformed.

    Parsed here with the standard library rather than Starlette's form
    parser, which needs ``python-multipart`` for a form of two fields.  The
    body was already read within ``[server] max_body_bytes`` (``BodyGuard``);
    a body that is not ASCII or has more than ``_MAX_FORM_FIELDS`` fields is
    malformed (``parse_qs`` raises ``ValueError`` past its field limit).
    """
    try:
        text = (await request.body()).decode("ascii")
        fields = urllib.parse.parse_qs(
            text, keep_blank_values=True, max_num_fields=_MAX_FORM_FIELDS
        )
    except ValueError:  # UnicodeDecodeError is one
        return None
    return {name: values[0] for name, values in fields.items()}


def _task_of(found: Task | StoredTask) -> Task:
    """A task store's answer (a cluster store wraps the Task) as the Task."""
    return found.task if isinstance(found, StoredTask) else found


def _owner_of_approval(approval: Approval) -> str:
    return owner_of(Caller(identity=approval.caller, tenant=approval.tenant))


def _decider(caller: Caller, request: Request) -> Decider:
    """Who decides, as the approvals store checks and records it.

    Without authentication (a development agent, loopback clients only) the
    operator is named by its address and holds the ``operator`` role.
    """
    if caller.authenticated:
        return Decider(
            identity=caller.identity,
            tenant=caller.tenant,
            roles=frozenset(roles_of(caller)),
            via="console",
            scheme=auth_scheme(caller),
        )
    client = request.client.host if request.client else "unknown address"
    return Decider(
        identity=f"unauthenticated operator at {client}",
        roles=frozenset({OPERATOR_ROLE}),
        via="console",
    )


def _page_number(value: str) -> int:
    """A ``page`` query parameter as a page number (1 when absent or not a number)."""
    return int(value) if value.isdigit() and 0 < len(value) < 7 and int(value) > 0 else 1


#: Every console page: no framing by other sites, no scripts, nothing cached.
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
