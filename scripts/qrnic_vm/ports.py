# SPDX-License-Identifier: GPL-2.0-or-later
"""Free UDP ports on 127.0.0.1, for -netdev dgram cables (the VM runner and
the qtest tier both use this one copy)."""
import socket


def free_udp_ports(n):
    """n distinct UDP ports on 127.0.0.1 that were free a moment ago."""
    socks, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(('127.0.0.1', 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports
