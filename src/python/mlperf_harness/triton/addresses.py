"""Server addresses as the command line gives them: `host:port[,host:port...]` for the harness's
--triton_servers, one `host` for a server's --listen."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from mlperf_harness.errors import HarnessError

DEFAULT_LISTEN = "127.0.0.1"  # a server reachable from other hosts needs an explicit --listen
DEFAULT_GRPC_PORT = 8001  # Triton's own default
# A host name as DNS allows it (letters, digits, dashes, dots), or an IPv4 address.
_HOST_NAME = re.compile(
    r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)


@dataclass(frozen=True, order=True)
class ServerAddress:
    host: str  # a name, an IPv4 address, or an IPv6 address without brackets
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def check_host(text: str, what: str) -> str:
    """A host name or IP address (IPv6 with or without brackets), returned without brackets."""
    host = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if not _HOST_NAME.match(host) or len(host) > 253:
        raise HarnessError(f"{what}: {text!r} is not a host name or IP address")
    return host


def check_port(text: str, what: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise HarnessError(f"{what}: port {text!r} is not a number from 1 to 65535")
    return int(text)


def parse_server(text: str) -> ServerAddress:
    """`host:port` (IPv6: `[addr]:port`)."""
    what = f"--triton_servers entry {text!r}"
    host, separator, port = text.strip().rpartition(":")
    if not separator or not host:
        raise HarnessError(f"{what} is not host:port (e.g. 127.0.0.1:{DEFAULT_GRPC_PORT})")
    if ":" in host and not host.startswith("["):
        raise HarnessError(f"{what}: write an IPv6 address in brackets, [addr]:port")
    return ServerAddress(check_host(host, what), check_port(port, what))


def parse_servers(text: str) -> tuple[ServerAddress, ...]:
    """Every address of a comma-separated list, each once; an empty list or entry is refused."""
    entries = [entry.strip() for entry in text.split(",")]
    if not text.strip() or any(not entry for entry in entries):
        raise HarnessError(
            f"--triton_servers {text!r}: give host:port[,host:port...] with no empty entry"
        )
    servers = tuple(parse_server(entry) for entry in entries)
    repeated = sorted({str(s) for s in servers if servers.count(s) > 1})
    if repeated:
        raise HarnessError(f"--triton_servers names {', '.join(repeated)} more than once")
    return servers
