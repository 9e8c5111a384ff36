"""Defect 5 of issue 19: a resource named `chat-a` took over the Service `chat-a` of a resource named `chat`.

Names that would collide are refused up front; every tick checks that the
children exist and are this resource's, re-creates what is missing and leaves
alone (with a Warning) what another controller holds.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "campaigns"))

from children_rig import NS, ChildrenRig  # noqa: E402

from forescale_operator.children import name_problem  # noqa: E402


@pytest.mark.parametrize("name,refused", [
    ("chat", False), ("chat-a", True), ("chat-b", True), ("a", False), ("b-a", True), ("chat-c", False),
    ("chat-ab", False), ("chat-a-x", False), ("x-b-b", True),
])
def test_names_ending_in_a_pool_suffix_are_refused(name, refused):
    problem = name_problem(name)
    assert (problem is not None) is refused
    if refused:
        assert name in problem and "-a or -b" in problem


@pytest.mark.parametrize("first", ["chat", "chat-a"])
async def test_chat_a_cannot_take_chat_s_service(cluster, api, example, first):
    rig = ChildrenRig(cluster, api, example)
    for name in (first, "chat" if first == "chat-a" else "chat-a"):
        await rig.create(name)
    assert rig.phase("chat-a") == "Invalid" and "ends in '-a'" in rig.ready_message("chat-a")
    assert rig.intact("chat") == []
    assert cluster.get("deployments", NS, "chat-a-a") is None  # nothing of chat-a was made
    cluster.delete("inferencedeployments", NS, "chat-a")
    await rig.tick("chat")
    assert rig.intact("chat") == []


CHILDREN = [("services", "chat-a"), ("services", "chat-b"), ("services", "chat"), ("deployments", "chat-a"),
            ("deployments", "chat-b")]


@pytest.mark.parametrize("plural,child", CHILDREN)
async def test_a_deleted_child_is_recreated_at_the_next_tick(cluster, api, example, plural, child):
    rig = ChildrenRig(cluster, api, example)
    await rig.create("chat")
    await rig.tick("chat")
    cluster.delete(plural, NS, child)
    assert rig.intact("chat") != []
    await rig.tick("chat")
    assert rig.intact("chat") == []


@pytest.mark.parametrize("plural,child", CHILDREN)
async def test_a_child_held_by_another_controller_is_left_alone_with_a_warning(cluster, api, example, plural, child):
    rig = ChildrenRig(cluster, api, example)
    await rig.create("chat")
    await rig.tick("chat")
    foreign = cluster.get(plural, NS, child)
    foreign["metadata"]["ownerReferences"] = [{"apiVersion": "example.com/v1", "kind": "Other", "name": "someone",
                                               "uid": "other-uid", "controller": True}]
    foreign["metadata"]["labels"]["forescale.io/deployment"] = "someone"
    foreign["metadata"].pop("resourceVersion", None)
    cluster.put(foreign)
    for _ in range(2):
        await rig.tick("chat")
    assert rig.phase("chat") == "Invalid"
    assert "controlled by Other/someone" in rig.ready_message("chat")
    assert rig.owner_uid(plural, child) == "other-uid"  # untouched
    assert rig.events["chat"].reasons.count("ChildConflict") == 1  # said once, not every tick
    # The other controller lets go: the next tick takes the name back.
    cluster.delete(plural, NS, child)
    await rig.tick("chat")
    assert rig.intact("chat") == [] and rig.phase("chat") != "Invalid"
