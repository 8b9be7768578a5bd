"""``NodeSet`` and ``NodeQuorum`` (core/contract/nodes.py) with scripted nodes: the rules on their own.

Each ``Script`` node answers a tip and block hashes from its own table, can
be down, hang or refuse; the real nodes are in tests/test_node_redundancy.py.
"""

from __future__ import annotations

import asyncio
import logging
import os

import pytest

from orbchain.api import (
    Block, BlockRef, ChainUnavailable, ConfigError, NodeQuorum, NodeSet, node_name, node_urls_setting, quorum_setting,
)


class Script:
    """One node's answers: the chain as a list of hashes (index = height)."""

    def __init__(self, url: str, chain: list[str]) -> None:
        self.url, self.chain = url, chain
        self.down = self.hang = False
        self.calls = 0

    async def _answer(self):
        self.calls += 1
        if self.hang:
            await asyncio.sleep(60)
        if self.down:
            raise ChainUnavailable(f"cannot reach {self.url}: ConnectError")

    async def tip(self) -> BlockRef:
        await self._answer()
        return BlockRef(len(self.chain) - 1, self.chain[-1])

    async def hash(self, height: int) -> str:
        await self._answer()
        if height >= len(self.chain):
            raise ChainUnavailable("above the tip")
        return self.chain[height]

    async def send(self, raw: str) -> str:
        await self._answer()
        return f"sent {raw} via {self.url}"


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


class Adapter(NodeQuorum):
    """The single-node reads of a plugin, through the failover client as a plugin writes them."""

    def __init__(self, nodes: NodeSet[Script]) -> None:
        self.nodes = nodes
        self.client = nodes.client()

    async def node_tip(self) -> BlockRef:
        return await self.client.tip()

    async def node_block_hash(self, height: int) -> str:
        return await self.client.hash(height)

    async def node_block(self, height: int) -> Block:
        block_hash = await self.client.hash(height)
        return Block(height, block_hash, await self.client.hash(height - 1) if height else "0")


HONEST = ["g", "a1", "a2", "a3"]


def make(chains: list[list[str]], quorum: int | None = None, **kwargs) -> tuple[Adapter, list[Script], Clock]:
    clock = Clock()
    urls = [f"http://user:secret@node{i}.example:8332/key{i}?apikey=k{i}" for i in range(len(chains))]
    scripts = {url: Script(url, list(chain)) for url, chain in zip(urls, chains)}
    nodes = NodeSet("testchain", urls, scripts.__getitem__, quorum=quorum or len(chains) // 2 + 1,
                    answer_seconds=0.2, clock=clock, **kwargs)
    return Adapter(nodes), list(scripts.values()), clock


def states(adapter: Adapter) -> list[str]:
    return [s.state for s in adapter.node_states()]


async def test_one_node_behaves_as_before():
    adapter, (node,), _ = make([HONEST])
    assert await adapter.tip() == BlockRef(3, "a3")
    assert await adapter.block_hash(2) == "a2"
    assert node.calls == 2 and states(adapter) == ["up"]
    node.down = True
    with pytest.raises(ChainUnavailable, match="0 of 1 node"):
        await adapter.tip()
    assert states(adapter) == ["down"]


async def test_tip_is_the_highest_block_a_quorum_has_and_agrees_on():
    adapter, nodes, _ = make([HONEST, HONEST[:3], HONEST[:2]], lag_blocks=1)
    assert await adapter.tip() == BlockRef(2, "a2")  # two of three have block 2
    assert states(adapter) == ["up", "up", "up"]
    nodes[2].chain = HONEST[:1]  # two blocks behind the agreed tip, more than lag_blocks
    assert await adapter.tip() == BlockRef(2, "a2")
    assert states(adapter) == ["up", "up", "behind"]


async def test_a_node_down_or_hanging_leaves_the_others_to_serve():
    adapter, nodes, _ = make([HONEST, HONEST, HONEST])
    nodes[0].down, nodes[1].hang = True, True
    with pytest.raises(ChainUnavailable, match="1 of 3 node"):
        await adapter.tip()  # one answer is not a quorum of two
    nodes[1].hang = False
    assert await adapter.tip() == BlockRef(3, "a3")
    assert await adapter.block(2) == Block(2, "a2", "a1")
    assert states(adapter)[0] == "down"
    assert await adapter.client.send("tx") == f"sent tx via {nodes[1].url}"  # failover past the down node


async def test_a_down_node_is_probed_aside_and_never_waited_for():
    adapter, nodes, _ = make([HONEST, HONEST, HONEST])
    nodes[0].hang = True
    assert await adapter.tip() == BlockRef(3, "a3")  # waited once, answer_seconds, to learn it is down
    assert states(adapter)[0] == "down"
    assert await adapter.tip() == BlockRef(3, "a3")
    probe = adapter.nodes.nodes[0].probe
    assert probe is not None and not probe.done()  # the tip was agreed without it
    nodes[0].hang = False
    await probe
    assert await adapter.tip() == BlockRef(3, "a3")
    await adapter.tip()
    assert states(adapter) == ["up", "up", "up"]


async def test_a_node_contradicting_the_quorum_is_set_aside_once_then_asked_again(caplog):
    liar = HONEST[:2] + ["forged2", "forged3"]
    adapter, nodes, clock = make([liar, HONEST, HONEST])
    with caplog.at_level(logging.WARNING, "orbchain.core.contract.nodes"):
        assert await adapter.tip() == BlockRef(3, "a3")
        assert await adapter.block(2) == Block(2, "a2", "a1")
        assert await adapter.tip() == BlockRef(3, "a3")
    assert states(adapter) == ["set aside", "up", "up"]
    warnings = [r.getMessage() for r in caplog.records if "set aside" in r.getMessage()]
    assert warnings == ["testchain: node http://node0.example:8332 reported block 3, unlike the quorum of 2:"
                        " set aside for 600 s"]
    calls = nodes[0].calls
    await adapter.tip()
    assert nodes[0].calls == calls  # not asked while set aside
    clock.now += 601
    assert states(adapter)[0] == "unknown"
    await adapter.tip()
    assert nodes[0].calls == calls + 1 and states(adapter)[0] == "set aside"


async def test_a_block_is_checked_on_a_quorum_and_the_others_asked_only_when_they_differ():
    adapter, nodes, _ = make([HONEST, HONEST, HONEST])
    await adapter.tip()
    before = [n.calls for n in nodes]
    await adapter.block(3)
    assert [n.calls - b for n, b in zip(nodes, before)] == [2, 2, 0]
    nodes[1].chain = HONEST[:3] + ["forged3"]
    assert await adapter.block(3) == Block(3, "a3", "a2")
    assert states(adapter) == ["up", "set aside", "up"]


async def test_a_tie_credits_nothing_and_sets_nobody_aside():
    adapter, _, _ = make([HONEST, HONEST[:3] + ["forged3"]], quorum=1)
    with pytest.raises(ChainUnavailable, match="no 1 of the nodes agree on block 3"):
        await adapter.tip()
    assert states(adapter) == ["up", "up"]
    adapter, _, _ = make([HONEST, HONEST[:3] + ["forged3"]])  # default quorum of two nodes: both
    with pytest.raises(ChainUnavailable, match="no 2 of the nodes agree"):
        await adapter.tip()


def test_node_names_carry_no_credentials():
    assert node_name("https://user:pw@eth.example.com/v3/SECRETKEY?key=1") == "https://eth.example.com"
    assert node_name("http://[::1]:8545") == "http://[::1]:8545"
    adapter, _, _ = make([HONEST, HONEST])
    assert [s.name for s in adapter.node_states()] == ["http://node0.example:8332", "http://node1.example:8332"]
    same_host, _, _ = make([HONEST, HONEST, HONEST])
    nodes = NodeSet("x", ["http://h:1/a", "http://h:1/b"], lambda url: Script(url, HONEST))
    assert [s.name for s in nodes.states()] == ["http://h:1#1", "http://h:1#2"]
    assert same_host.nodes.quorum == 2


async def test_errors_shown_for_a_node_carry_no_credentials():
    adapter, nodes, _ = make([HONEST, HONEST, HONEST])
    nodes[0].down = True
    await adapter.tip()
    error = adapter.node_states()[0].error
    assert error and "secret" not in error and "key0" not in error and "node0.example" in error


def test_urls_and_quorum_settings():
    assert node_urls_setting({"u": "http://a"}, "plugin.x", "u") == ("http://a",)
    assert node_urls_setting({"u": ["http://a", "http://b"]}, "plugin.x", "u") == ("http://a", "http://b")
    assert node_urls_setting({}, "plugin.x", "u") is None
    for bad in ([], ["http://a", "http://a"], [""], 3):
        with pytest.raises(ConfigError, match="plugin.x.u"):
            node_urls_setting({"u": bad}, "plugin.x", "u")
    assert [quorum_setting({}, "p", n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]
    assert quorum_setting({"quorum": 1}, "p", 2) == 1
    with pytest.raises(ConfigError, match="'p.quorum' is 3 but only 2"):
        quorum_setting({"quorum": 3}, "p", 2)


# -- each chain's config: one URL as before, or a list and a quorum ---------------------------------------------


def _chain_settings(make_config, plugin: str, block: dict):
    from orbchain.chains.bitcoin.settings import read_settings as bitcoin
    from orbchain.chains.evm.settings import read_settings as evm
    from orbchain.chains.monero.settings import read_settings as monero
    from orbchain.chains.solana.settings import read_settings as solana
    from orbchain.chains.tron.settings import read_settings as tron

    if plugin == "bitcoin":
        return bitcoin(make_config(plugin={"bitcoin": {"LTC": block}}))["LTC"]
    if plugin == "monero":
        return monero(make_config(plugin={"monero": block}))
    return {"evm": lambda b: evm({"ethereum": b})["ethereum"], "tron": tron, "solana": solana}[plugin](block)


CHAINS = {  # plugin: (its block without the URL, the URL key, the settings field holding the URLs)
    "bitcoin": ({"rpc_user": "u", "rpc_password": "p", "network": "regtest"}, "rpc_url", "rpc_urls"),
    "evm": ({"chain_id": 1}, "rpc_url", "rpc_url"),
    "tron": ({}, "url", "url"),
    "solana": ({}, "rpc_url", "rpc_url"),
    "monero": ({"wallet_rpc_url": "http://127.0.0.1:18083", "network": "regtest"}, "daemon_url", "daemon_url"),
}


@pytest.mark.parametrize("plugin", sorted(CHAINS))
def test_every_chain_takes_one_url_or_a_list_and_a_quorum(plugin, make_config):
    base, key, field = CHAINS[plugin]
    one = _chain_settings(make_config, plugin, {**base, key: "http://10.0.0.1:1"})
    assert one.quorum == 1 and [n.name for n in NodeSet(plugin, getattr(one, field), str).states()] == [
        "http://10.0.0.1:1"]
    urls = ["http://10.0.0.1:1", "http://10.0.0.2:1", "http://user:pw@10.0.0.3:1"]
    three = _chain_settings(make_config, plugin, {**base, key: urls})
    assert (tuple(getattr(three, field)), three.quorum) == (tuple(urls), 2)
    assert "pw" not in repr(three)
    assert _chain_settings(make_config, plugin, {**base, key: urls, "quorum": 3}).quorum == 3
    with pytest.raises(ConfigError, match="quorum' is 4 but only 3"):
        _chain_settings(make_config, plugin, {**base, key: urls, "quorum": 4})
    with pytest.raises(ConfigError, match=f"'plugin.{plugin}.*{key}'"):
        _chain_settings(make_config, plugin, {**base, key: ["http://10.0.0.1:1", "ftp://10.0.0.2"]})


# -- how far a node may lag before it is "behind": per chain, a default each ---------------------------------------

LAG_DEFAULTS = {"bitcoin": 4, "evm": 5, "tron": 5, "solana": 150, "monero": 2}  # bitcoin's block here is LTC's


@pytest.mark.parametrize("plugin", sorted(CHAINS))
def test_every_chain_takes_node_lag_blocks_with_its_own_default(plugin, make_config):
    base, key, _ = CHAINS[plugin]
    block = {**base, key: ["http://10.0.0.1:1", "http://10.0.0.2:1"]}
    assert _chain_settings(make_config, plugin, block).node_lag_blocks == LAG_DEFAULTS[plugin]
    assert _chain_settings(make_config, plugin, {**block, "node_lag_blocks": 0}).node_lag_blocks == 0
    assert _chain_settings(make_config, plugin, {**block, "node_lag_blocks": 40}).node_lag_blocks == 40
    for bad in (-1, "many", 2.5, True):
        with pytest.raises(ConfigError, match=rf"'plugin\.{plugin}\.((LTC|ethereum)\.)?node_lag_blocks' must be an integer >= 0,"
                                              rf" got {bad!r}"):
            _chain_settings(make_config, plugin, {**block, "node_lag_blocks": bad})


async def test_node_lag_blocks_is_what_marks_a_node_behind():
    """The same node three blocks below the agreed tip: up with a lag of 3, behind with 2."""
    for lag, state in ((3, "up"), (2, "behind")):
        adapter, nodes, _ = make([HONEST, HONEST, HONEST], lag_blocks=lag)
        nodes[2].chain = HONEST[:1]  # its tip is block 0, the agreed tip block 3
        assert await adapter.tip() == BlockRef(3, "a3")
        assert states(adapter) == ["up", "up", state]


def test_config_check_names_a_bad_node_lag_blocks(tmp_path, monkeypatch, capsys):
    """An operator's typo stops ``orbchain config check`` with the key and what it must be, not a traceback."""
    from orbchain.cli import main

    for name in [n for n in os.environ if n.startswith("ORBCHAIN_")]:
        monkeypatch.delenv(name)
    path = tmp_path / "orbchain.toml"
    base = (f'[server]\ndata_dir = "{tmp_path}"\nenvironment = "development"\n\n'
            '[plugin.monero]\ndaemon_url = ["http://10.0.0.1:18081", "http://10.0.0.2:18081"]\n'
            'wallet_rpc_url = "http://10.0.0.3:18083"\nnetwork = "regtest"\n')
    path.write_text(base + 'node_lag_blocks = "two"\n')
    assert main(["--config", str(path), "config", "check"]) == 2
    assert capsys.readouterr().err.strip() == (
        "orbchain: config key 'plugin.monero.node_lag_blocks' must be an integer >= 0, got 'two'")
    path.write_text(base + "node_lag_blocks = 3\n")
    assert main(["--config", str(path), "config", "check"]) == 0
