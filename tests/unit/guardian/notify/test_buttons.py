"""Buttons follow the episode; clicks are planned (authorization, staleness, repeats)."""

from __future__ import annotations

import pytest

from guardian.adapters.slack.blocks import preview, render_parent, render_reply
from guardian.engine.notify.buttons import ButtonAction, ButtonRules, commands, offered
from guardian.engine.notify.click_plan import (
    Access,
    Click,
    ClickFacts,
    ClickOutcome,
    apply_click,
    plan_click,
)
from guardian.model.notifications import Phase
from guardian.model.remediation_events import StepOutcome

from .samples import T0, firing, grace, reclaimed

ON = ButtonRules(enabled=True)
ACCESS = Access(admins=("U0ADMIN",), by_namespace={"ml-research": ("U0ALICE", "S0ONCALL")})
A = ButtonAction


def _click(action: str = "keep_4h", user: str = "U0ALICE") -> Click:
    return Click(action, firing().episode, user, "C0ALERTS", "1764003600.000100", T0 + 3600)


def test_buttons_change_as_the_episode_moves_on() -> None:
    assert offered(firing(), ON) == (A.KEEP_4H, A.KEEP_24H, A.EXEMPT)
    assert offered(reclaimed(), ON) == (A.RESTORE,)
    assert offered(reclaimed().with_changes(phase=Phase.RESTORED, restore_command=None), ON) == ()
    assert offered(firing().with_changes(phase=Phase.RESOLVED, resolved_at=T0 + 5000), ON) == ()
    assert offered(firing().with_changes(exempted_by="U0ALICE"), ON) == ()
    assert offered(firing(), ButtonRules()) == ()  # no interactivity configured
    assert offered(reclaimed(), ButtonRules(enabled=True, kill_switch=True)) == ()
    assert offered(firing().with_changes(workload=None), ON) == ()


def test_reclaim_now_only_in_an_enforced_grace_period_and_when_turned_on() -> None:
    rules = ButtonRules(enabled=True, reclaim_now=True)
    assert A.RECLAIM_NOW in offered(grace(), rules)
    assert A.RECLAIM_NOW not in offered(grace(), ON)
    assert A.RECLAIM_NOW not in offered(firing(), rules)
    assert A.RECLAIM_NOW not in offered(
        grace().with_changes(last_outcome=StepOutcome.DRY_RUN), rules
    )
    assert A.RECLAIM_NOW not in offered(grace().with_changes(kept_until=T0 + 9999), rules)


def test_every_open_message_carries_the_exact_commands() -> None:
    snooze, exempt = commands(firing(), T0 + 3600)
    target = "-n ml-research deployment.apps/train-llm"
    assert snooze == (
        f"kubectl annotate --overwrite {target} gpu-guardian.io/snooze-until=2025-11-24T21:00:00Z"
    )
    assert exempt == f"kubectl annotate --overwrite {target} gpu-guardian.io/exclude=true"
    assert commands(reclaimed(), T0) == ("guardian restore ml-research/Deployment/train-llm",)
    text = preview(render_parent(firing(), T0 + 3600))
    assert snooze in text
    assert exempt in text


def test_the_parent_renders_the_offered_buttons_with_the_episode_as_value() -> None:
    blocks = render_parent(grace(), T0 + 3600, buttons=ON).blocks
    [actions] = [b for b in blocks if b["type"] == "actions"]
    assert [e["action_id"] for e in actions["elements"]] == ["keep_4h", "keep_24h", "exempt"]
    assert {e["value"] for e in actions["elements"]} == {grace().episode}
    assert "confirm" in actions["elements"][2]  # Exempt asks first
    assert "[ Keep 4h ]  [ Keep 24h ]  [ Exempt ]" in preview(
        render_parent(grace(), T0, buttons=ON)
    )


def test_an_authorized_click_plans_the_keep_until_four_hours_after_the_press() -> None:
    plan = plan_click(_click(), ClickFacts(firing()), ACCESS, ON)
    assert plan.action is A.KEEP_4H
    assert plan.keep_until == T0 + 3600 + 4 * 3600
    assert plan.answer is None


@pytest.mark.parametrize(
    ("user", "member_of", "owners", "allowed"),
    [
        ("U0ALICE", frozenset(), (), True),  # by namespace
        ("U0ADMIN", frozenset(), (), True),  # everywhere
        ("U0BOB", frozenset({"S0ONCALL"}), (), True),  # through a user group
        ("U0CAROL", frozenset(), ("U0CAROL",), True),  # the namespace's owners annotation
        ("U0MALLORY", frozenset({"S0OTHER"}), ("U0CAROL",), False),
    ],
)
def test_authorization(
    user: str, member_of: frozenset[str], owners: tuple[str, ...], allowed: bool
) -> None:
    facts = ClickFacts(firing(), owners=owners, member_of=member_of)
    plan = plan_click(_click(user=user), facts, ACCESS, ON)
    assert (plan.action is not None) is allowed
    if not allowed:
        assert plan.answer is not None
        assert "not allowed" in plan.answer
        assert "`ml-research`" in plan.answer


def test_owners_annotation_can_be_turned_off() -> None:
    access = Access(owners_annotation=False)
    facts = ClickFacts(firing(), owners=("U0CAROL",))
    assert plan_click(_click(user="U0CAROL"), facts, access, ON).action is None


def test_refusals_change_nothing_and_say_why() -> None:
    def answer(click: Click, facts: ClickFacts, rules: ButtonRules = ON) -> str:
        plan = plan_click(click, facts, ACCESS, rules)
        assert plan.action is None
        assert plan.answer is not None
        return plan.answer

    assert "kill switch" in answer(_click(), ClickFacts(firing(), kill_switch=True))
    assert "kill switch" in answer(_click(), ClickFacts(firing()), ButtonRules(True, True))
    assert "already done" in answer(_click(), ClickFacts(firing(), done_before=True))
    assert "moved on (it is reclaimed)" in answer(_click(), ClickFacts(reclaimed()))
    assert "moved on" in answer(_click("restore"), ClickFacts(firing()))
    assert "not an episode" in answer(_click(), ClickFacts(None))
    assert "not one of" in answer(_click("launch_rockets"), ClickFacts(firing()))


def test_the_thread_says_who_did_what() -> None:
    outcome = ClickOutcome(
        firing().episode, "k", A.KEEP_4H, "U0ALICE", T0 + 3600, keep_until=T0 + 5 * 3600
    )
    after, entry = apply_click(firing(), outcome)
    assert after.kept_until == T0 + 5 * 3600
    assert after.kept_by == "U0ALICE"
    reply = render_reply(entry, after)
    assert "<@U0ALICE> kept it until 2025-11-24 21:00 UTC" in reply.blocks[0]["text"]["text"]
    parent = preview(render_parent(after, T0 + 3600, buttons=ON))
    assert "*Kept* until 2025-11-24 21:00 UTC by <@U0ALICE>." in parent
