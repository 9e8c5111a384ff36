"""The result cache's policies, its key, and its factory."""

from __future__ import annotations

import pytest

from forescale_server.result_cache import cache_key, make_cache


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def k(i) -> tuple:
    return cache_key("minilm", "fp32", f"text {i}")


def test_key_separates_model_precision_and_input():
    keys = {cache_key("minilm", "fp32", "a"), cache_key("minilm", "int8", "a"), cache_key("other", "fp32", "a"), cache_key("minilm", "fp32", "b")}
    assert len(keys) == 4


@pytest.mark.parametrize("policy", ["lru", "hotness", "window", "turn"])
def test_every_policy_stores_bounds_and_clears(policy):
    cache = make_cache(policy, capacity=3, clock=Clock())
    for i in range(5):
        cache.put(k(i), i)
    assert len(cache) == 3
    assert cache.get(k(4)) == 4
    cache.clear()
    assert len(cache) == 0 and cache.get(k(4)) is None


def test_lru_evicts_least_recently_used():
    cache = make_cache("lru", capacity=2)
    cache.put(k(1), 1)
    cache.put(k(2), 2)
    cache.get(k(1))  # 2 is now the oldest use
    cache.put(k(3), 3)
    assert (cache.get(k(1)), cache.get(k(2)), cache.get(k(3))) == (1, None, 3)


def test_hotness_keeps_the_hot_entry_over_a_recent_cold_one():
    cache = make_cache("hotness", capacity=2)
    cache.put(k("hot"), "hot")
    for _ in range(5):
        cache.get(k("hot"))
    cache.put(k("cold"), "cold")
    cache.put(k("new"), "new")  # evicts the coldest: "cold" (0 hits), not "hot" (5 hits, older)
    assert cache.get(k("hot")) == "hot"
    assert cache.get(k("cold")) is None
    assert cache.get(k("new")) == "new"


def test_hotness_survives_many_hits_without_growing_unbounded():
    cache = make_cache("hotness", capacity=10)
    for i in range(10):
        cache.put(k(i), i)
    for _ in range(1000):
        cache.get(k(3))
    assert len(cache._heap) <= 4 * 16 + 1
    assert cache.hits(k(3)) == 1000


def test_window_expires_entries_after_their_last_use():
    clock = Clock()
    cache = make_cache("window", capacity=10, window_s=60, clock=clock)
    cache.put(k(1), 1)
    cache.put(k(2), 2)
    clock.now = 50
    assert cache.get(k(1)) == 1  # renews entry 1
    clock.now = 100
    assert cache.get(k(2)) is None  # 100 s since its last use
    assert cache.get(k(1)) == 1  # 50 s since its last use
    clock.now = 200
    cache.put(k(3), 3)  # a put also drops what expired
    assert len(cache) == 1


def test_turn_policy_keeps_the_last_turns_of_each_conversation():
    cache = make_cache("turn", capacity=100, keep_turns=2)
    cache.put(k("a0"), 0, conversation="a", turn=0)
    cache.put(k("b0"), 0, conversation="b", turn=0)
    cache.put(k("a1"), 1, conversation="a", turn=1)
    assert cache.get(k("a0")) == 0  # turns 0 and 1 are the last two
    cache.put(k("a2"), 2, conversation="a", turn=2)
    assert cache.get(k("a0")) is None  # conversation a moved two turns past it
    assert cache.get(k("a1")) == 1
    assert cache.get(k("b0")) == 0  # another conversation is untouched
    cache.put(k("free"), "x")  # no conversation: plain LRU entry
    assert cache.get(k("free")) == "x"


def test_none_policy_stores_nothing():
    cache = make_cache("none")
    cache.put(k(1), 1)
    assert cache.get(k(1)) is None and len(cache) == 0


@pytest.mark.parametrize(
    "args,message",
    [(("bogus",), "unknown cache policy"), (("lru", 0), "capacity"), (("window", 10, 0), "window"), (("turn", 10, 60, 0), "keep_turns")],
)
def test_factory_rejects_bad_settings(args, message):
    with pytest.raises(ValueError, match=message):
        make_cache(*args)
