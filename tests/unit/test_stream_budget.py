"""web/stream_budget.py: a process's stream budget from its open-file limit (issue 42 item 5)."""

from orbchain.core.infra.config import Config, LiveConfig
from orbchain.web.stream_budget import StreamBudget, measure


def budget(configured: int = 2000, limit: int = 1024, open_at_start: int = 20, reserved: int = 256,
           share: int = 10) -> StreamBudget:
    return StreamBudget(configured=configured, file_limit=limit, open_at_start=open_at_start, reserved=reserved,
                        page_share_percent=share)


def test_the_open_file_limit_decides_when_it_leaves_less_than_max_streams():
    shipped = budget()  # the unit's old default limit against the default max_streams
    assert shipped.by_files == 1024 - 20 - 256 == 748
    assert shipped.streams == 748 and shipped.limited_by_files


def test_max_streams_decides_when_the_files_allow_more():
    raised = budget(limit=65536)
    assert raised.streams == 2000 and not raised.limited_by_files


def test_a_limit_below_the_reserve_allows_no_stream_rather_than_a_negative_number():
    starved = budget(limit=200)
    assert starved.by_files == 0 and starved.streams == 0 and starved.per_page == 0


def test_one_payment_holds_its_share_of_the_budget_and_at_least_one():
    assert budget(limit=65536).per_page == 200  # 10 % of 2000
    assert budget().per_page == 74  # 10 % of 748, rounded down
    assert budget(configured=5).per_page == 1  # 10 % of 5 is no stream at all: one
    assert budget(limit=65536, share=100).per_page == 2000


def test_the_log_line_says_where_the_number_comes_from():
    text = budget().describe()
    assert "at most 748" in text and "74 per payment" in text
    assert "open-file limit 1024" in text and "20 open at start" in text and "256 reserved" in text
    assert "max_streams gives 2000" in text


def test_measure_reads_this_process_and_the_config(monkeypatch):
    import orbchain.web.stream_budget as module

    monkeypatch.setattr(module, "open_file_limit", lambda: 4096)
    monkeypatch.setattr(module, "files_open", lambda: 40)
    config = Config(live=LiveConfig(max_streams=500, reserved_files=100, max_page_share_percent=20))
    measured = measure(config)
    assert measured == StreamBudget(configured=500, file_limit=4096, open_at_start=40, reserved=100,
                                    page_share_percent=20)
    assert measured.streams == 500 and measured.per_page == 100


def test_connections_keep_half_the_reserve_and_the_file_an_accept_needs():
    assert budget().connections == 1024 - 20 - 128 - 1
    assert budget(limit=100).connections == 0  # below the reserve: nothing to cap with, so no cap at all
