"""web/client_address.py: the key a client's address counts under for per-address bounds (issue 42)."""

import pytest

from orbchain.web.client_address import address_group


def test_an_ipv4_address_is_its_own_key():
    assert address_group("198.51.100.7") == "198.51.100.7"
    assert address_group("198.51.100.7") != address_group("198.51.100.8")


def test_every_address_of_an_ipv6_slash_64_counts_as_one():
    one = address_group("2001:db8:1:2::1")
    assert one == "2001:db8:1:2::/64"
    assert address_group("2001:db8:1:2:ffff:ffff:ffff:fffe") == one
    assert address_group("2001:0db8:0001:0002:0000:0000:0000:0009") == one  # however it is written
    assert address_group("2001:db8:1:3::1") != one  # the next /64 is another client


@pytest.mark.parametrize("mapped, ipv4", [("::ffff:198.51.100.7", "198.51.100.7"),
                                          ("::ffff:c633:6407", "198.51.100.7")])
def test_an_ipv4_address_mapped_into_ipv6_counts_as_the_ipv4_address(mapped, ipv4):
    assert address_group(mapped) == ipv4


def test_a_link_local_zone_is_dropped():
    assert address_group("fe80::1%eth0") == address_group("fe80::2%eth1") == "fe80::/64"


@pytest.mark.parametrize("text", ["unknown", "", "not-an-address", "300.1.2.3"])
def test_text_that_is_no_address_is_kept_as_it_is(text):
    assert address_group(text) == text
