"""The change skills (authority ``execute``): interface state and MTU, static routes.

Each call reads the state before, and with ``dry_run`` returns the exact
change without applying it.  Otherwise it applies the change, reads the state
back and compares: any failure on the way (a step the kernel refuses, a
read-back that differs) restores the state read before, exactly, and the
task fails saying so.  Before, applied and (after a rollback) restored states
are published as supporting records carrying the caller and the task, and
beside them a ``change-approval`` record naming what approved the change
(approval id and approvers, :mod:`.approval`).

``confirm_within`` makes it a confirmed change (:mod:`.confirm`): after
applying, the task waits in ``input-required`` for ``{"confirm": true}`` from
the caller, asked with the host's deadline (``request_input(...,
deadline=...)``).  Without a confirmation in time the host runs the handler's
next turn itself at the deadline: ``InputDeadlinePassed`` rolls the change
back, and the task ends there with the rollback's before, applied and
restored states, no message from the caller needed.
"""

from __future__ import annotations

import copy
import datetime as dt
import errno
import ipaddress
import json
import logging
import socket
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from skillrack import ConditionError, ErrorCode, InputDeadlinePassed

from . import encoding, netlink
from .approval import APPROVAL_KIND, approval_record
from .confirm import CONFIRMED, Confirmations, Pending
from .devices import Devices, invalid, kernel, rejected
from .settings import Device

audit = logging.getLogger("skillrack_linux.audit")

INTERFACE_CHANGE = "interface-change"
ROUTE_CHANGE = "route-change"


def dry_run(arguments: Mapping[str, Any]) -> bool:
    """``Skill.changes_nothing``: a dry run reads and plans only, so it waits for no approval."""
    return arguments.get("dry_run") is True


def confirmation_request(confirm_by: str) -> dict[str, Any]:
    """What the task asks for while a confirmed change waits."""
    return {
        "needed": "confirmation",
        "confirm_by": confirm_by,
        "message": (
            f'The change is applied. Reply {{"confirm": true}} by {confirm_by} to keep it, '
            f'or {{"confirm": false}} to roll it back now; without a reply by then it is '
            "rolled back by itself."
        ),
        "schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {"confirm": {"type": "boolean"}},
            "required": ["confirm"],
        },
    }


def _answer(value: Any) -> bool | None:
    """True to confirm, False to roll back, None when the answer says neither."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in ("confirm", "yes", "true"):
            return True
        if text.lower() in ("cancel", "no", "false", "rollback", "roll back"):
            return False
        try:
            value = json.loads(text)
        except ValueError:
            return None
    if isinstance(value, Mapping) and isinstance(value.get("confirm"), bool):
        return bool(value["confirm"])
    if isinstance(value, bool):
        return value
    return None


async def _ask(context: Any, pending: Pending) -> bool | None:
    """The caller's answer to the confirmation question; False once its deadline passed."""
    try:
        answer = await context.request_input(
            confirmation_request(pending.confirm_by), deadline=pending.deadline
        )
    except InputDeadlinePassed:
        return False  # not confirmed in time: roll back (the backstop timer may have)
    return _answer(answer)


def _caller(context: Any) -> dict[str, str]:
    caller = context.caller
    return {"identity": str(caller.identity), "tenant": str(caller.tenant)}


def _interface_state(link: netlink.Link) -> dict[str, Any]:
    return {
        "admin_state": "up" if link.admin_up else "down",
        "mtu": link.mtu,
        "oper_status": encoding.OPER_STATUS.get(link.operstate, "unknown"),
    }


def _same(wanted: Mapping[str, Any], seen: Mapping[str, Any]) -> bool:
    return bool(wanted["admin_state"] == seen["admin_state"] and wanted["mtu"] == seen["mtu"])


class Change:
    """The change handlers of one agent's devices."""

    def __init__(self, devices: Devices, confirmations: Confirmations) -> None:
        self.devices = devices
        self.confirmations = confirmations

    # -- shared --------------------------------------------------------------------------------

    async def _record(
        self,
        context: Any,
        kind: str,
        device: Device,
        subject: dict[str, str],
        phase: str,
        state: Any,
    ) -> str:
        record_id = f"{kind}-{context.task_id}-{phase}"
        record = {
            "record_id": record_id,
            "device_id": device.device_id,
            **subject,
            "phase": phase,
            "observed_at": encoding.now(),
            "producer": encoding.producer(context.skill_id),
            "caller": _caller(context),
            "task_id": context.task_id,
            "state": state,
        }
        approved = context.approval
        audit.info(
            "task %s: %s %s %s by %s (approval %s): %s",
            context.task_id,
            context.skill_id,
            device.device_id,
            phase,
            record["caller"]["identity"],
            "none" if approved is None else (approved.approval_id or approved.via),
            json.dumps(state, sort_keys=True),
        )
        return str(await context.publish_record(kind, record, artifact_id=record_id))

    async def _approval(
        self, context: Any, kind: str, device: Device, subject: dict[str, str]
    ) -> str:
        """Publish what approved this change (approval id, approvers): its authority."""
        record = approval_record(context, kind, device, subject, _caller(context))
        record_id = record["record_id"]
        return str(await context.publish_record(APPROVAL_KIND, record, artifact_id=record_id))

    async def _confirmed(
        self,
        context: Any,
        arguments: Mapping[str, Any],
        result: dict[str, Any],
        restore: Callable[[], Awaitable[Any]],
    ) -> dict[str, Any]:
        """Apply done: without ``confirm_within`` the result; with it, park for a confirmation."""
        seconds = arguments.get("confirm_within")
        if seconds is None:
            return result
        deadline = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)
        confirm_by = encoding.timestamp(deadline)
        owner = (str(context.caller.identity), str(context.caller.tenant))
        result["confirm_by"] = confirm_by
        self.confirmations.schedule(
            context.task_id, owner, deadline, confirm_by, restore, copy.deepcopy(result)
        )
        # Parks the task; at the deadline the host runs the next turn (_follow_up) itself.
        await context.request_input(confirmation_request(confirm_by), deadline=deadline)
        raise AssertionError("request_input returned on the turn that asked")  # pragma: no cover

    async def _follow_up(
        self,
        pending: Pending,
        context: Any,
        arguments: Mapping[str, Any],
        kind: str,
        device: Device,
        subject: dict[str, str],
        result: dict[str, Any],
    ) -> dict[str, Any]:
        """A later turn of a confirmed change: confirm it, roll it back, or report the rollback.

        The host runs this turn itself at the deadline when nobody answered
        (``InputDeadlinePassed``): the change is rolled back and the task ends.
        """
        answer = await _ask(context, pending)
        while answer is None and pending.state == "pending":
            answer = await _ask(context, pending)  # neither yes nor no: ask again, same deadline
        if (str(context.caller.identity), str(context.caller.tenant)) != pending.owner:
            raise ConditionError(
                ErrorCode.AUTHORIZATION_FAILED,
                "only the caller who applied the change may confirm it",
            )
        if answer is True and await self.confirmations.confirm(pending):
            result["outcome"] = "confirmed"
            result["supporting_record_refs"].append(
                await self._record(context, kind, device, subject, CONFIRMED, result["after"])
            )
            return result
        await self.confirmations.roll_back(pending)
        if pending.failure is not None:
            raise ConditionError(
                ErrorCode.CONSTRAINT_REJECTED,
                f"the change was not confirmed and its rollback failed ({pending.failure}); "
                f"device {device.device_id!r} may still hold it: check it",
            )
        result["outcome"] = "rolled_back"
        result["restored"] = pending.restored
        result["supporting_record_refs"].append(
            await self._record(context, kind, device, subject, "restored", pending.restored)
        )
        return result

    # -- set_interface_state --------------------------------------------------------------------

    async def set_interface_state(self, arguments: Mapping[str, Any], context: Any) -> Any:
        device = self.devices.get(arguments["device_id"])
        name: str = arguments["interface"]
        subject = {"interface": name}

        async def read() -> dict[str, Any]:
            link = await kernel(device, lambda: netlink.link(device.netns, name))
            if link is None:
                raise rejected(
                    f"device {device.device_id!r} has no interface {name!r}", "/interface"
                )
            return _interface_state(link)

        pending = self.confirmations.get(context.task_id)
        if pending is not None:
            return await self._follow_up(
                pending,
                context,
                arguments,
                INTERFACE_CHANGE,
                device,
                subject,
                copy.deepcopy(pending.result),
            )

        link = await kernel(device, lambda: netlink.link(device.netns, name))
        if link is None:
            raise rejected(f"device {device.device_id!r} has no interface {name!r}", "/interface")
        before = _interface_state(link)
        mtu = arguments.get("mtu")
        if mtu is not None:
            low = link.min_mtu or 68
            high = link.max_mtu or 65535
            if not low <= mtu <= high:
                raise rejected(
                    f"MTU {mtu} is outside the range of {name!r} on {device.device_id!r} "
                    f"({low} to {high})",
                    "/mtu",
                )
        after = dict(before)
        if "admin_state" in arguments:
            after["admin_state"] = arguments["admin_state"]
        if mtu is not None:
            after["mtu"] = mtu
        result: dict[str, Any] = {
            "device_id": device.device_id,
            "interface": name,
            "outcome": "dry_run",
            "before": before,
            "after": after,
            "supporting_record_refs": [],
        }
        if arguments.get("dry_run"):
            return result
        if _same(after, before):
            result["outcome"] = "unchanged"
            return result
        refs = result["supporting_record_refs"]
        refs.append(await self._approval(context, INTERFACE_CHANGE, device, subject))
        refs.append(
            await self._record(context, INTERFACE_CHANGE, device, subject, "before", before)
        )

        async def put(state: Mapping[str, Any]) -> dict[str, Any]:
            """Set ``state`` (MTU, then admin state) and read it back."""
            await kernel(
                device,
                lambda: netlink.set_link(
                    device.netns, name, mtu=state["mtu"], up=state["admin_state"] == "up"
                ),
                changing=True,
            )
            seen = await read()
            if not _same(state, seen):
                raise _Mismatch(seen)
            return seen

        try:
            applied = await put(after)
        except Exception as exc:
            await self._restore_or_say(device, put, read, before)
            raise _change_failed(
                exc, device, "/mtu" if mtu is not None else "/admin_state"
            ) from None
        result["after"] = applied
        refs.append(
            await self._record(context, INTERFACE_CHANGE, device, subject, "applied", applied)
        )
        result["outcome"] = "applied"

        async def restore() -> dict[str, Any]:
            restored = await put(before)
            return restored

        return await self._confirmed(context, arguments, result, restore)

    async def _restore_or_say(
        self,
        device: Device,
        put: Callable[[Any], Awaitable[Any]],
        read: Callable[[], Awaitable[Any]],
        before: Any,
    ) -> None:
        """Put ``before`` back unless the device still holds it (the first step failed)."""
        try:
            if _same(before, await read()):
                return
            await put(before)
        except Exception as exc:
            logging.getLogger("skillrack_linux").error(
                "skillrack-linux: device %s: a failed change could not be undone (%s)",
                device.device_id,
                type(exc).__name__,
            )
            raise ConditionError(
                ErrorCode.CONSTRAINT_REJECTED,
                f"the change failed and the previous state of device {device.device_id!r} "
                "could not be restored: check it",
            ) from None

    # -- set_static_route -----------------------------------------------------------------------

    async def set_static_route(self, arguments: Mapping[str, Any], context: Any) -> Any:
        device = self.devices.get(arguments["device_id"])
        action: str = arguments["action"]
        try:
            network = ipaddress.ip_network(arguments["prefix"])
        except ValueError:
            raise invalid(
                f"{arguments['prefix']!r} is not a prefix (address/length with no host bits set)",
                "/prefix",
            ) from None
        prefix = str(network)
        subject = {"prefix": prefix}
        family = socket.AF_INET if network.version == 4 else socket.AF_INET6

        pending = self.confirmations.get(context.task_id)
        if pending is not None:
            return await self._follow_up(
                pending,
                context,
                arguments,
                ROUTE_CHANGE,
                device,
                subject,
                copy.deepcopy(pending.result),
            )

        next_hop: Mapping[str, Any] = arguments.get("next_hop", {})
        gateway = next_hop.get("address")
        if gateway is not None:
            try:
                gateway_ip = ipaddress.ip_address(gateway)
            except ValueError:
                raise invalid(f"{gateway!r} is not an IP address", "/next_hop/address") from None
            if gateway_ip.version != network.version:
                raise invalid(
                    f"next hop {gateway} is not of the prefix's address family",
                    "/next_hop/address",
                )
            gateway = str(gateway_ip)
        out_interface = next_hop.get("interface")
        blackhole = bool(next_hop.get("blackhole"))
        if blackhole and (gateway or out_interface):
            raise invalid("a blackhole route has no gateway or interface", "/next_hop")
        if out_interface is not None:
            link = await kernel(device, lambda: netlink.link(device.netns, out_interface))
            if link is None:
                raise rejected(
                    f"device {device.device_id!r} has no interface {out_interface!r}",
                    "/next_hop/interface",
                )

        async def find() -> netlink.Route | None:
            found = await kernel(device, lambda: netlink.routes(device.netns))
            return next((r for r in found if r.family == family and r.prefix == prefix), None)

        def state(route: netlink.Route | None) -> dict[str, Any]:
            if route is None:
                return {"present": False}
            return {"present": True, "route": encoding.kernel_route(route)}

        current = await find()
        if action == "add" and current is not None:
            raise rejected(f"a route to {prefix} already exists on {device.device_id!r}", "/prefix")
        if action == "remove":
            if current is None:
                raise rejected(f"there is no route to {prefix} on {device.device_id!r}", "/prefix")
            if current.protocol != "static":
                raise rejected(
                    f"the route to {prefix} on {device.device_id!r} is not static "
                    f"(protocol {current.protocol}); only static routes are removed",
                    "/prefix",
                )
        before = state(current)
        if action == "add":
            planned = netlink.Route(
                family,
                prefix,
                netlink.RTN_BLACKHOLE if blackhole else netlink.RTN_UNICAST,
                "static",
                None,
                gateway,
                out_interface,
            )
            after = state(planned)
        else:
            after = state(None)
        result: dict[str, Any] = {
            "device_id": device.device_id,
            "prefix": prefix,
            "action": action,
            "outcome": "dry_run",
            "before": before,
            "after": after,
            "supporting_record_refs": [],
        }
        if arguments.get("dry_run"):
            return result
        refs = result["supporting_record_refs"]
        refs.append(await self._approval(context, ROUTE_CHANGE, device, subject))
        refs.append(await self._record(context, ROUTE_CHANGE, device, subject, "before", before))

        async def add(route: netlink.Route) -> None:
            await kernel(
                device,
                lambda: netlink.change_route(
                    device.netns,
                    "add",
                    route.prefix,
                    gateway=route.gateway,
                    interface=route.interface,
                    blackhole=route.kind == netlink.RTN_BLACKHOLE,
                    metric=route.metric,
                ),
                changing=True,
            )

        async def delete() -> None:
            await kernel(
                device, lambda: netlink.change_route(device.netns, "del", prefix), changing=True
            )

        async def apply() -> dict[str, Any]:
            if action == "add":
                await add(planned)
            else:
                await delete()
            seen = await find()
            if (seen is None) != (action == "remove"):
                raise _Mismatch(state(seen))
            return state(seen)

        async def restore() -> dict[str, Any]:
            seen = await find()
            if action == "add" and seen is not None:
                await delete()
            if action == "remove" and seen is None and current is not None:
                await add(current)
            return state(await find())

        try:
            applied = await apply()
        except Exception as exc:
            try:
                await restore()
            except Exception:
                raise ConditionError(
                    ErrorCode.CONSTRAINT_REJECTED,
                    f"the change failed and the route to {prefix} on {device.device_id!r} "
                    "could not be restored: check it",
                ) from None
            pointer = "/next_hop" if action == "add" else "/prefix"
            raise _change_failed(exc, device, pointer) from None
        result["after"] = applied
        refs.append(await self._record(context, ROUTE_CHANGE, device, subject, "applied", applied))
        result["outcome"] = "applied"
        return await self._confirmed(context, arguments, result, restore)


class _Mismatch(Exception):
    """The state read back is not the state set."""

    def __init__(self, seen: Any) -> None:
        super().__init__("read back differs")
        self.seen = seen


def _change_failed(exc: Exception, device: Device, pointer: str) -> ConditionError:
    """Why a change failed (the previous state is back), as the draft's error."""
    if isinstance(exc, ConditionError):
        return exc
    if isinstance(exc, _Mismatch):
        message = "the state read back differs from the state set"
    elif isinstance(exc, netlink.KernelRefused):
        reason = {
            errno.EINVAL: "the kernel refused the value",
            errno.ENETUNREACH: "the next hop is not reachable from the device",
            errno.EEXIST: "it already exists",
            errno.ESRCH: "it does not exist",
            errno.ENODEV: "the interface does not exist",
        }.get(exc.errno, f"the kernel refused it ({exc})")
        message = reason
    else:
        message = f"it failed ({type(exc).__name__})"
    return ConditionError(
        ErrorCode.CONSTRAINT_REJECTED,
        f"the change on device {device.device_id!r} was not applied: {message}; "
        "the previous state is restored",
        pointer=pointer,
    )
