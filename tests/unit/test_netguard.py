"""The outbound URL guard (core/infra/netguard.py): no webhook or look-up into the operator's network."""

from __future__ import annotations

import socket

import pytest

from orbchain.core.infra.netguard import MAX_URL_LENGTH, UnsafeUrl, check_public_url, parse_http_url

PRIVATE_LITERALS = [
    "http://127.0.0.1/hook",
    "http://127.1/",
    "http://10.0.0.5/",
    "http://172.16.3.4:8080/",
    "http://192.168.1.10/",
    "http://169.254.169.254/latest/meta-data/",  # cloud metadata
    "http://100.64.0.1/",  # carrier-grade NAT
    "http://0.0.0.0/",
    "http://224.0.0.1/",
    "http://255.255.255.255/",
    "http://240.0.0.1/",
    "http://[::1]/",
    "http://[::]/",
    "http://[fe80::1]/",
    "http://[fe80::1%25eth0]/",
    "http://[fc00::1]/",
    "http://[fd12:3456::1]/",
    "http://[ff02::1]/",
]

IPV4_MAPPED_V6 = [
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:7f00:1]/",
    "http://[::ffff:10.1.2.3]/",
    "http://[::ffff:169.254.169.254]/",
]

# Spellings the C resolver turns into 127.0.0.1 although ipaddress rejects them.
OBFUSCATED_LOOPBACK = ["http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/"]

INTERNAL_NAMES = [
    "http://localhost/",
    "http://LOCALHOST:9000/",
    "http://localhost./",
    "http://api.localhost/",
    "http://metadata.google.internal/",
    "http://printer.local/",
]


@pytest.fixture
def fake_dns(monkeypatch):
    """Answer name look-ups from a table instead of the network."""
    table: dict[str, list[str]] = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in table:
            return [
                (socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port))
                for ip in table[host]
            ]
        if host.endswith(".test"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table


@pytest.mark.parametrize("url", PRIVATE_LITERALS + IPV4_MAPPED_V6 + OBFUSCATED_LOOPBACK)
async def test_private_and_internal_literals_are_refused(url):
    with pytest.raises(UnsafeUrl, match="private or internal"):
        await check_public_url(url)


@pytest.mark.parametrize("url", INTERNAL_NAMES)
async def test_internal_names_are_refused_without_resolving(url, fake_dns):
    with pytest.raises(UnsafeUrl, match="private or internal"):
        await check_public_url(url)


@pytest.mark.parametrize("url", ["http://8.8.8.8/hook", "https://1.1.1.1:8443/", "https://[2606:4700:4700::1111]/"])
async def test_public_literals_pass(url):
    await check_public_url(url)


async def test_a_name_resolving_to_loopback_is_refused(fake_dns):
    fake_dns["rebind.example.test"] = ["127.0.0.1"]
    with pytest.raises(UnsafeUrl, match="private or internal"):
        await check_public_url("https://rebind.example.test/hook")


async def test_one_private_address_among_public_ones_is_enough_to_refuse(fake_dns):
    fake_dns["mixed.example.test"] = ["93.184.216.34", "10.0.0.7"]
    with pytest.raises(UnsafeUrl):
        await check_public_url("https://mixed.example.test/")


async def test_a_name_resolving_to_a_mapped_v6_loopback_is_refused(fake_dns):
    fake_dns["v6.example.test"] = ["::ffff:127.0.0.1"]
    with pytest.raises(UnsafeUrl):
        await check_public_url("https://v6.example.test/")


async def test_a_name_resolving_to_public_addresses_passes(fake_dns):
    fake_dns["shop.example.test"] = ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]
    await check_public_url("https://shop.example.test/webhooks?x=1")


async def test_an_unresolvable_name_is_refused(fake_dns):
    with pytest.raises(UnsafeUrl, match="does not resolve"):
        await check_public_url("https://nowhere.example.test/")


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/hook", "http://localhost/", "http://[::1]/", "http://10.0.0.1/"])
async def test_allow_private_switch_lets_local_receivers_through(url):
    await check_public_url(url, allow_private=True)


@pytest.mark.parametrize(
    "url",
    [
        "ftp://example.com/",
        "file:///etc/passwd",
        "gopher://example.com/",
        "javascript:alert(1)",
        "example.com/hook",
        "http://",
        "https:///path",
        "",
        "http://example.com:99999/",
        "http://example.com:port/",
    ],
)
@pytest.mark.parametrize("allow_private", [False, True])
async def test_bad_schemes_and_malformed_urls_are_refused_even_when_private_is_allowed(url, allow_private):
    with pytest.raises(UnsafeUrl):
        await check_public_url(url, allow_private=allow_private)


@pytest.mark.parametrize("url", ["http://user:pass@example.com/", "https://user@example.com/", "http://:pw@example.com/"])
@pytest.mark.parametrize("allow_private", [False, True])
async def test_credentials_in_the_url_are_refused(url, allow_private):
    with pytest.raises(UnsafeUrl, match="credentials"):
        await check_public_url(url, allow_private=allow_private)


@pytest.mark.parametrize("value", [None, 42, b"http://example.com/"])
async def test_non_strings_are_refused(value):
    with pytest.raises(UnsafeUrl):
        await check_public_url(value)  # type: ignore[arg-type]


async def test_overlong_urls_are_refused():
    url = "https://example.com/" + "a" * (MAX_URL_LENGTH - len("https://example.com/") + 1)
    with pytest.raises(UnsafeUrl, match="at most 500"):
        await check_public_url(url, allow_private=True)


def test_parse_http_url_defaults_the_port_by_scheme():
    assert parse_http_url("http://Example.com/x") == ("example.com", 80)
    assert parse_http_url("https://example.com/x") == ("example.com", 443)
    assert parse_http_url("https://example.com:8443/") == ("example.com", 8443)
    assert parse_http_url("http://[::1]:9000/") == ("::1", 9000)


async def test_guarded_resolver_refuses_names_that_resolve_inside():
    from orbchain.core.infra.netguard import GuardedResolver, outbound_session

    resolver = GuardedResolver(allow_private=False)
    with pytest.raises(OSError, match="private or internal"):
        await resolver.resolve("localhost", 80)
    await resolver.close()
    allowed = GuardedResolver(allow_private=True)
    assert (await allowed.resolve("localhost", 80))[0]["host"] in ("127.0.0.1", "::1")
    await allowed.close()
    async with outbound_session(allow_private=False, timeout_seconds=2) as session:
        with pytest.raises(Exception) as info:
            await session.get("http://localhost:9/")
        assert "private or internal" in str(info.value) or isinstance(info.value.__cause__, OSError)


# IPv6 transition forms carry an IPv4 address and are judged as that address (issue 10, class 7).
EMBEDDED_INTERNAL_V6 = {
    "6to4 of 127.0.0.1": "http://[2002:7f00:1::]/",
    "6to4 of 10.0.0.1": "http://[2002:a00:1::1]/",
    "6to4 of the metadata address": "http://[2002:a9fe:a9fe::]/",
    "Teredo, client 127.0.0.1 (inverted)": "http://[2001:0:808:808:0:0:80ff:fffe]/",
    "Teredo, server 10.0.0.1": "http://[2001:0:a00:1::f7f7:f7f7]/",
    "NAT64 of 127.0.0.1": "http://[64:ff9b::7f00:1]/",
    "NAT64 of 192.168.0.1": "http://[64:ff9b::c0a8:1]/",
    "local NAT64 /96 layout": "http://[64:ff9b:1::7f00:1]/",
    "local NAT64 /48 layout": "http://[64:ff9b:1:7f00:0:100::]/",
    "IPv4-compatible 127.0.0.1": "http://[::127.0.0.1]/",
    "IPv4-compatible 169.254.169.254": "http://[::a9fe:a9fe]/",
}
EMBEDDED_PUBLIC_V6 = {
    "6to4 of 8.8.8.8": "http://[2002:808:808::1]/",
    "Teredo, server and client 8.8.8.8": "http://[2001:0:808:808::f7f7:f7f7]/",
    "NAT64 of 8.8.8.8": "http://[64:ff9b::808:808]/",
    "IPv4-compatible 8.8.8.8": "http://[::8.8.8.8]/",
    "IPv4-mapped 8.8.8.8": "http://[::ffff:8.8.8.8]/",
}


@pytest.mark.parametrize("url", EMBEDDED_INTERNAL_V6.values(), ids=EMBEDDED_INTERNAL_V6.keys())
async def test_ipv6_forms_embedding_an_internal_ipv4_are_refused(url):
    with pytest.raises(UnsafeUrl, match="private or internal"):
        await check_public_url(url)


@pytest.mark.parametrize("url", EMBEDDED_PUBLIC_V6.values(), ids=EMBEDDED_PUBLIC_V6.keys())
async def test_ipv6_forms_embedding_a_public_ipv4_are_judged_as_that_address(url):
    await check_public_url(url)


def test_embedded_ipv4_reads_each_form():
    from ipaddress import IPv4Address, IPv6Address

    from orbchain.core.infra.netguard import embedded_ipv4

    loopback = IPv4Address("127.0.0.1")
    assert embedded_ipv4(IPv6Address("2002:7f00:1::")) == [loopback]
    assert embedded_ipv4(IPv6Address("2001:0:4136:e378:8000:63bf:80ff:fffe")) == [
        IPv4Address("65.54.227.120"), loopback]  # RFC 4380's example: server, then the inverted client
    assert embedded_ipv4(IPv6Address("64:ff9b::7f00:1")) == [loopback]
    assert embedded_ipv4(IPv6Address("::127.0.0.1")) == [loopback]
    assert embedded_ipv4(IPv6Address("::ffff:127.0.0.1")) == [loopback]
    assert loopback in embedded_ipv4(IPv6Address("64:ff9b:1:7f00:0:100::"))
    assert embedded_ipv4(IPv6Address("2606:4700:4700::1111")) == []


@pytest.mark.parametrize("name", ["6to4", "Teredo", "NAT64", "compatible"])
async def test_a_name_resolving_to_a_transition_form_of_loopback_is_refused(fake_dns, name):
    address = {"6to4": "2002:7f00:1::", "Teredo": "2001:0:808:808::80ff:fffe", "NAT64": "64:ff9b::7f00:1",
               "compatible": "::7f00:1"}[name]
    fake_dns["sneaky.example.test"] = [address]
    with pytest.raises(UnsafeUrl, match="private or internal"):
        await check_public_url("https://sneaky.example.test/")


@pytest.mark.parametrize("address", ["2002:7f00:1::", "2001:0:808:808::80ff:fffe", "64:ff9b::a9fe:a9fe", "::7f00:1"])
async def test_guarded_resolver_refuses_transition_forms_at_connect_time(address):
    """DNS rebinding to a 6to4/Teredo/NAT64 spelling of an internal host is caught when connecting."""
    from orbchain.core.infra.netguard import GuardedResolver

    class Rebinding:
        async def resolve(self, host, port=0, family=socket.AF_INET):
            return [{"hostname": host, "host": address, "port": port, "family": socket.AF_INET6,
                     "proto": 0, "flags": 0}]

        async def close(self):
            pass

    resolver = GuardedResolver(allow_private=False)
    await resolver.close()
    resolver._inner = Rebinding()
    with pytest.raises(OSError, match="private or internal"):
        await resolver.resolve("hooks.example.com", 443)
    public = GuardedResolver(allow_private=False)
    await public.close()

    class Public(Rebinding):
        async def resolve(self, host, port=0, family=socket.AF_INET):
            return [{"hostname": host, "host": "2002:808:808::1", "port": port, "family": socket.AF_INET6,
                     "proto": 0, "flags": 0}]

    public._inner = Public()
    assert (await public.resolve("hooks.example.com", 443))[0]["host"] == "2002:808:808::1"
