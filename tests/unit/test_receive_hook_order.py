"""``decide_receive_target`` asks every plugin, async ones included, until one answers.

Regression: pluggy's own first-result call stopped at the first async
implementation (its coroutine object is not None), so with Monero's hook
registered the Lightning plugin was never asked and BTC_LN payments were 503.
"""

from __future__ import annotations

from orbchain.core.contract.hooks import Hooks
from orbchain.core.contract.plugins import get_plugin_manager, hookimpl
from orbchain.core.payments.receive import ReceiveTarget, plugin_receive_target


class Silent:
    PLUGIN_NAME = "silent"

    @hookimpl
    async def decide_receive_target(self, gateway, payment, coin):
        return None


class Answering:
    PLUGIN_NAME = "answering"

    @hookimpl
    async def decide_receive_target(self, gateway, payment, coin):
        return ReceiveTarget(address=None, extra={"answered_by": "answering"})


class FakeGateway:
    def __init__(self, pm):
        self.pm = pm
        self.hooks = Hooks(pm, self)


async def test_a_second_async_plugin_is_asked_when_the_first_answers_none():
    for order in ((Silent(), Answering()), (Answering(), Silent())):
        pm = get_plugin_manager(list(order), load_entrypoints=False)
        target = await plugin_receive_target(FakeGateway(pm), {"track_id": "t"}, object())
        assert isinstance(target, ReceiveTarget) and target.extra == {"answered_by": "answering"}


async def test_nobody_answering_is_none():
    pm = get_plugin_manager([Silent()], load_entrypoints=False)
    assert await plugin_receive_target(FakeGateway(pm), {"track_id": "t"}, object()) is None


class Wrapping:
    """A pluggy hook wrapper: it sees the decision only when the call goes through pluggy (issue 44)."""

    PLUGIN_NAME = "wrapping"

    def __init__(self):
        self.seen = []

    @hookimpl(wrapper=True)
    def decide_receive_target(self):
        answer = yield
        self.seen.append(answer)
        return answer


async def test_the_decision_goes_through_pluggys_wrappers_and_tracing():
    wrapping = Wrapping()
    pm = get_plugin_manager([Answering(), Silent(), wrapping], load_entrypoints=False)
    traced = []
    pm.add_hookcall_monitoring(lambda name, impls, kwargs: None,
                               lambda outcome, name, impls, kwargs: traced.append((name, outcome.get_result())))

    target = await plugin_receive_target(FakeGateway(pm), {"track_id": "t"}, object())

    assert wrapping.seen == [target] and traced == [("decide_receive_target", target)]
    assert target.extra == {"answered_by": "answering"}
