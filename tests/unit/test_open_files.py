"""core/infra/open_files.py: the soft open-file limit raised to the hard one, never past the kernel's ceiling."""

import logging
import resource

import pytest

import orbchain.core.infra.open_files as open_files


@pytest.fixture
def limits(monkeypatch):
    """A pretend RLIMIT_NOFILE: ``limits["now"]`` is (soft, hard); ``limits["set"]`` what setrlimit was given."""
    state = {"now": (1024, 524288), "set": [], "refuse": None}

    def getrlimit(which):
        assert which == resource.RLIMIT_NOFILE
        return state["now"]

    def setrlimit(which, value):
        assert which == resource.RLIMIT_NOFILE
        if state["refuse"]:
            raise state["refuse"]
        state["set"].append(value)
        state["now"] = value

    monkeypatch.setattr(open_files.resource, "getrlimit", getrlimit)
    monkeypatch.setattr(open_files.resource, "setrlimit", setrlimit)
    monkeypatch.setattr(open_files, "_ceiling", lambda: 1048576)
    return state


def test_the_soft_limit_is_raised_to_the_hard_one(limits, caplog):
    caplog.set_level(logging.INFO)
    assert open_files.raise_open_file_limit() == (1024, 524288)
    assert limits["set"] == [(524288, 524288)]
    assert "open-file limit raised from 1024 to 524288" in caplog.text


def test_nothing_is_set_when_the_unit_already_gave_both(limits):
    limits["now"] = (65536, 65536)  # LimitNOFILE=65536 sets soft and hard
    assert open_files.raise_open_file_limit() == (65536, 65536)
    assert limits["set"] == []


def test_an_unlimited_hard_limit_stops_at_the_kernels_ceiling(limits):
    limits["now"] = (1024, resource.RLIM_INFINITY)
    assert open_files.raise_open_file_limit() == (1024, 1048576)
    assert limits["set"] == [(1048576, resource.RLIM_INFINITY)]


def test_a_refusal_keeps_the_limit_and_says_so(limits, caplog):
    limits["refuse"] = PermissionError(1, "Operation not permitted")
    assert open_files.raise_open_file_limit() == (1024, 1024)
    assert limits["now"] == (1024, 524288)
    assert "could not raise the open-file limit from 1024 to 524288" in caplog.text


def test_files_open_counts_this_processes_descriptors():
    before = open_files.files_open()
    with open(open_files.__file__, "rb"), open(open_files.__file__, "rb"):
        assert open_files.files_open() == before + 2
