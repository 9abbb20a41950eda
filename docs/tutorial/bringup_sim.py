#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""bringup_sim.py: lesson 1 without a VM -- bring a qrnic device model up
step by step, as the kernel driver does at boot, and print what it says.

    python3 docs/tutorial/bringup_sim.py

The device model is the C code QEMU runs (model/), driven through the test
harness (tests/qrnic_harness.py: its small driver writes the same registers
and admin commands as guest-driver/kernel/qrnic_main.c).  Every figure is
read from the model: the registers, the replies of QUERY_DEVICE and
QUERY_PORT, the GIDs and the device's own counters.  The steps are those of
the lesson's picture (img/boot-bringup.svg).  Needs the build (meson setup
build && ninja -C build); QRNIC_BUILD_DIR is honoured.
"""
import ipaddress
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), 'tests'))

import qrnic_harness as q  # noqa: E402


def gid_str(raw):
    a = ipaddress.IPv6Address(raw)
    return f'::ffff:{a.ipv4_mapped}' if a.ipv4_mapped else str(a)


def status_str(v):
    bits = [n for b, n in ((0, 'READY'), (1, 'ENABLED'), (2, 'FATAL')) if v >> b & 1]
    return f'{v:#x} ({" ".join(bits) or "none"})'


def main():
    try:
        w = q.World(1, init=False)      # one device model, powered on, not brought up
    except (q.HarnessError, OSError) as e:
        print(f'bringup_sim.py: the device model is not available ({e}); build first: '
              f'meson setup build && ninja -C build', file=sys.stderr)
        return 2
    d = w.devs[0]
    v = d.reg_read('VERSION')
    print(f'1-3.  PCI device found; VERSION register: ABI {v >> 16}.{v & 0xffff}; '
          f'STATUS {status_str(d.reg_read("STATUS"))}')
    d.bringup()
    print(f'4-5.  admin queue set up, CTRL = ENABLE; STATUS {status_str(d.reg_read("STATUS"))}')
    a = d.query_device()
    print(f'6-7.  QUERY_DEVICE: max_qp {a["max_qp"]}, max_qp_rd_atom {a["max_qp_rd_atom"]}, '
          f'max_cq {a["max_cq"]},\n'
          f'      max_cqe {a["max_cqe"]}, max_mr {a["max_mr"]}, max_msg_size {a["max_msg_size"]}, '
          f'{a["num_vectors"]} interrupt vectors')
    p = d.query_port()
    print(f'8-9.  QUERY_PORT: state {p["state"]} (4 = ACTIVE), Ethernet MTU {p["eth_mtu"]} -> '
          f'active_mtu {128 << p["active_mtu"]},\n'
          f'      {p["speed_mbps"] // 1000} Gb/s, GID table of {p["gid_tbl_len"]}')
    d.create_eq(8, vector=1, async_events=True)
    d.create_eq(8, vector=2)
    print('10.   CREATE_EQ twice: the async EQ (vector 1) and a completion EQ (vector 2)')
    d.set_gid(0, q.gid_v4('10.0.0.1'), q.NET_IPV4)
    print(f'12.   SET_GID 0 for 10.0.0.1: {gid_str(d.query_gid(0))}')
    print(f'      the device counted {d.stat("admin_cmds")} admin commands, '
          f'{d.stat("admin_errors")} errors')
    w.close()
    return 0


if __name__ == '__main__':
    sys.exit(main())
