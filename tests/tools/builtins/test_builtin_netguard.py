"""Which addresses ``webfetch`` may reach under ``private_network: False``."""

from __future__ import annotations

import ipaddress

import pytest

from toolnexus.tools.builtins._netguard import (
    GuardedResolver,
    RefusedAddress,
    is_public_address,
    parse_ip,
)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.255.0.9",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "100.64.0.1",
        "169.254.169.254",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "fd12:3456::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "64:ff9b::a9fe:a9fe",
        "2001:db8::1",
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert not is_public_address(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"]
)
def test_public_addresses_are_allowed(address: str) -> None:
    assert is_public_address(ipaddress.ip_address(address))


def test_parse_ip_reads_bracketed_ipv6_and_rejects_names() -> None:
    assert parse_ip("[::1]") == ipaddress.ip_address("::1")
    assert parse_ip("example.com") is None


async def test_the_resolver_refuses_a_name_with_a_refused_address() -> None:
    resolver = GuardedResolver(lambda ip: False)
    try:
        with pytest.raises(RefusedAddress, match="localhost resolves to"):
            await resolver.resolve("localhost", 80)
        assert resolver.refused is not None
    finally:
        await resolver.close()


async def test_the_resolver_passes_allowed_addresses_through() -> None:
    resolver = GuardedResolver(lambda ip: True)
    try:
        found = await resolver.resolve("127.0.0.1", 80)
    finally:
        await resolver.close()

    assert [entry["host"] for entry in found] == ["127.0.0.1"]
