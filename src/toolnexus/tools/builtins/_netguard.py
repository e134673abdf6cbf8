"""Which addresses ``webfetch`` may connect to under ``"private_network": False``.

`is_public_address` refuses every address that is not globally routable: loopback
(``127.0.0.0/8``, ``::1``), private (``10/8``, ``172.16/12``, ``192.168/16``, ``fc00::/7``),
shared (``100.64/10``), link-local (``169.254/16`` — cloud metadata — and ``fe80::/10``),
multicast, unspecified and reserved ranges. An IPv6 address that embeds an IPv4 one
(``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``) is judged by the embedded address.

`GuardedResolver` applies the rule where it cannot be dodged: at connection time, to every
address a host name resolves to (a name resolving to one public and one private address is
refused), for the first request and for every redirect, so DNS tricks that answer differently
the second time gain nothing. Addresses written literally in a URL never reach a resolver;
``webfetch`` checks those itself.

This module imports aiohttp; ``webfetch`` imports it on its first call only.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

__all__ = ["AddressPolicy", "GuardedResolver", "RefusedAddress", "is_public_address", "parse_ip"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
AddressPolicy = Callable[[IPAddress], bool]
"""``policy(ip)`` is ``True`` when ``webfetch`` may connect to ``ip``."""

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


class RefusedAddress(OSError):
    """A host resolved to an address the policy refuses."""

    def __init__(self, host: str, address: str) -> None:
        super().__init__(f"{host} resolves to {address}, a non-public address")
        self.host = host
        self.address = address


def parse_ip(text: str) -> IPAddress | None:
    """``text`` as an IP address (IPv6 brackets and zone allowed), or ``None``."""
    candidate = text.strip("[]")
    try:
        return ipaddress.ip_address(candidate)
    except ValueError:
        return None


def is_public_address(ip: IPAddress) -> bool:
    """Whether ``ip`` is a globally routable unicast address."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return is_public_address(ip.ipv4_mapped)
        if ip in _NAT64:
            return is_public_address(ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF))
    return ip.is_global and not (
        ip.is_multicast
        or ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_unspecified
    )


class GuardedResolver(AbstractResolver):
    """An aiohttp resolver that refuses a host when any of its addresses fails the policy.

    The refusal is kept in ``refused`` (aiohttp wraps the raised error in its own), so the
    caller can say exactly which host and address were refused.
    """

    def __init__(self, policy: AddressPolicy) -> None:
        self._inner = ThreadedResolver()
        self._policy = policy
        self.refused: RefusedAddress | None = None

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        for entry in found:
            ip = parse_ip(entry["host"])
            if ip is None or not self._policy(ip):
                self.refused = RefusedAddress(host, entry["host"])
                raise self.refused
        return found

    async def close(self) -> None:
        await self._inner.close()
