"""core/bounded.LruMap: the bound every per-process cache relies on."""

import pytest

from orbchain.core.infra.bounded import LruMap


def test_keeps_the_most_recently_used():
    cache: LruMap[str, int] = LruMap(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the oldest
    cache.put("c", 3)
    assert len(cache) == 2 and cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3


def test_put_of_a_present_key_refreshes_it():
    cache: LruMap[str, int] = LruMap(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.put("a", 10)  # "b" is now the oldest
    cache.put("c", 3)
    assert "b" not in cache and cache.get("a") == 10


def test_a_stream_of_new_keys_never_grows_it_past_its_size():
    cache: LruMap[int, int] = LruMap(100)
    for i in range(10_000):
        cache.put(i, i)
    assert len(cache) == 100 and cache.get(9_999) == 9_999 and cache.get(0) is None


def test_pop_and_clear():
    cache: LruMap[str, int] = LruMap(3)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.pop("a") == 1 and cache.pop("a") is None and "a" not in cache
    cache.clear()
    assert len(cache) == 0 and cache.get("b") is None


def test_refuses_unhashable_keys_and_an_empty_bound():
    with pytest.raises(TypeError):
        LruMap(2).get(["unhashable"])
    with pytest.raises(ValueError):
        LruMap(0)
