"""core/infra/episodes.py: repeated trouble is one line when it begins and one with its count when it ends."""

import asyncio
import logging

from orbchain.core.infra.episodes import Episode

log = logging.getLogger("orbchain.test.episodes")


def lines(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == log.name]


def test_a_thousand_occurrences_are_two_lines_with_the_count(caplog):
    caplog.set_level(logging.INFO)
    episode = Episode(log, "cannot accept on %(where)s", "accepting on %(where)s again after %(count)d failures",
                      level=logging.ERROR, end_level=logging.WARNING)
    for _ in range(1000):
        episode.hit(where="127.0.0.1:8080")
    assert lines(caplog) == ["cannot accept on 127.0.0.1:8080"]
    episode.over()
    assert lines(caplog)[1] == "accepting on 127.0.0.1:8080 again after 1000 failures"
    assert [r.levelname for r in caplog.records if r.name == log.name] == ["ERROR", "WARNING"]
    episode.over()  # nothing new: nothing logged
    episode.hit(where="127.0.0.1:8080")  # a new episode begins with its own line
    assert len(lines(caplog)) == 3 and episode.count == 1


async def test_an_episode_with_a_quiet_time_ends_by_itself(caplog):
    caplog.set_level(logging.INFO)
    episode = Episode(log, "refused %(address)s", "refused %(count)d in %(seconds).1f s", quiet_seconds=0.05)
    episode.hit(address="198.51.100.7")
    episode.hit(address="198.51.100.8")
    for _ in range(100):
        if not episode.ongoing:
            break
        await asyncio.sleep(0.05)
    assert lines(caplog)[0] == "refused 198.51.100.7"
    assert lines(caplog)[1].startswith("refused 2 in ")
