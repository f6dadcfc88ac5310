"""A member layer sees every call of the port under its operation's name, and can refuse any write."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest

from controller.member_layer import MemberLayer
from controller.planning.plan import ReplicaWrite
from controller.ports import ClusterIdentity, MemberWrite
from tests.support.member_fakes import FakeMember
from tests.support.planning_builders import fhpa
from tests.support.writes import apply_hpa, delete_hpa, scale

T = TypeVar("T")


class Recording(MemberLayer):
    def __init__(self, inner: FakeMember) -> None:
        super().__init__(inner)
        self.operations: list[str] = []

    def around(self, operation: str, call: Callable[[], T]) -> T:
        self.operations.append(operation)
        return call()


class RefuseScale(MemberLayer):
    def before_write(self, action: MemberWrite) -> None:
        if isinstance(action, ReplicaWrite):
            raise PermissionError("no scaling here")


def member() -> FakeMember:
    return FakeMember(ClusterIdentity(name="a"), [])


def test_every_call_passes_the_layer_under_its_operation_name() -> None:
    inner = member()
    layer = Recording(inner)
    obj = fhpa(clusters=["a"])
    assert layer.identity.name == "a" and layer.probe()
    layer.observe(obj)
    apply_hpa(layer, obj, {"maxReplicas": 3})
    scale(layer, obj, 4)
    delete_hpa(layer, obj)
    assert layer.operations == ["probe", "observe", "apply_hpa", "scale", "delete_hpa"]
    assert inner.calls == ["observe/a", "apply/a", "scale/a=4", "delete/a"]


def test_a_refused_write_never_reaches_the_member_and_layers_stack() -> None:
    inner = member()
    layer = Recording(RefuseScale(inner))  # type: ignore[arg-type]
    obj = fhpa(clusters=["a"])
    with pytest.raises(PermissionError):
        scale(layer, obj, 2)
    apply_hpa(layer, obj, {"maxReplicas": 3})
    assert inner.calls == ["apply/a"]
    assert layer.operations == ["scale", "apply_hpa"]  # the outer layer saw the refused call; the member not
