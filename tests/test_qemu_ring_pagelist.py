# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: rings named by page lists (ABI 1.8, spec 6.6.21) at register
level.  The qtest driver hands every CQ, SQ, RQ and SRQ ring of a page or
more to the device as a page list naming the ring's pages in reverse order
(tests/qtest/driver.py listed_ring), in guest RAM behind the real PCI
device; traffic wraps the rings; a bad list is refused."""
import random
import struct

import pytest

import qrnic_api
import qrnic_harness as h
from qtest import abi, scenarios
from qtest.fixtures import qemu_binary, shared_world  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu

qworld, world = shared_world('ring')


@pytest.fixture
def pl(world):
    for d in world.devs:
        d.ring_pagelist = True
    yield world
    for d in world.devs:
        d.ring_pagelist = False


def test_caps_version_and_max_cqe(world):
    for d in world.devs:
        assert d.reg_read('VERSION') == abi.ABI_VERSION >= 0x00010008
        assert d.reg_read('CAPS') & h.CAP_RING_PAGELIST
        assert d.attr['max_cqe'] == 1 << 22


def test_rc_through_page_listed_rings(pl):
    """CQs of 2 pages (256 CQEs), SQ/RQ of 8 pages (64 x 512 bytes): 300
    SENDs wrap every ring; then WRITE, READ, SEND and atomics."""
    a, b = pl.devs
    conn = h.connect_rc(a, b, mtu=1024, cq_log=8, sq_log=6, rq_log=6)
    assert conn.cqa.pages and conn.qa.sq_pages and conn.qa.rq_pages
    src = a.reg_mr(conn.pda, 1 << 16)
    dst = b.reg_mr(conn.pdb, 1 << 16)
    rng = random.Random(11)
    data = src.fill_random(rng)
    n = 0
    for rnd in range(10):
        for i in range(30):
            k = (n + i) % 16
            conn.qb.post_recv([(dst, k * 4096, 4096)], wr_id=n + i)
            conn.qa.post_send('SEND', [(src, k * 4096, 100 + n + i)], wr_id=n + i)
        sc = conn.cqa.wait(30)
        rc = conn.cqb.wait(30)
        assert [c['wr_id'] for c in sc] == [c['wr_id'] for c in rc] == list(range(n, n + 30))
        assert all(c['status_name'] == 'SUCCESS' for c in sc + rc)
        for c in rc:
            k = c['wr_id'] % 16
            assert c['byte_len'] == 100 + c['wr_id']
            assert dst.read(k * 4096, c['byte_len']) == data[k * 4096:k * 4096 + c['byte_len']]
        n += 30
    scenarios.exercise_rc(conn, seed=3)


def test_srq_and_resize_page_listed(pl):
    a, b = pl.devs
    pda, pdb = a.alloc_pd(), b.alloc_pd()
    srq = b.create_srq(pdb, log_depth=5, wqe_shift=9)           # 4 pages
    assert srq.pages
    conn = qrnic_api.connect_rc(a, b, pd_a=pda, pd_b=pdb, srq_b=srq, cq_log=8,
                                access=h.ACCESS_ALL)
    qa, cqa, cqb = conn.qa, conn.cqa, conn.cqb
    src = a.reg_mr(pda, 4096)
    dst = b.reg_mr(pdb, 1 << 17)
    src.fill_random(random.Random(2))
    n = 0
    for rnd in range(3):                 # 3 x 24 WQEs through the 32-slot SRQ
        for i in range(24):
            srq.post_recv([(dst, (n + i) % 32 * 4096, 4096)], wr_id=n + i)
            qa.post_send('SEND', [(src, 0, 64 + i)], wr_id=n + i)
        assert [c['wr_id'] for c in cqa.wait(24)] == list(range(n, n + 24))
        got = cqb.wait(24)
        assert [c['wr_id'] for c in got] == list(range(n, n + 24))
        assert [c['byte_len'] for c in got] == [64 + i for i in range(24)]
        n += 24
        if rnd == 0:                     # the receive CQ to a bigger listed ring
            assert cqb.resize(10) == 0
            assert cqb.pages and len(cqb.pages) == 8


def test_bad_page_list_is_refused(world):
    """A list with a zero entry, a misaligned entry or a misaligned list:
    BAD_PARAM on ring_addr; nothing created."""
    d = world.devs[0]
    first = d.create_cq(4)
    pages = [d.mem.alloc(4096) for _ in range(4)]
    for entries, align in ((pages[:3] + [0], 0), ([pages[0] + 8] + pages[1:], 0),
                           (pages, 4)):
        lst = d.mem.alloc(64, 8) + align
        d.qemu.memwrite(lst, struct.pack('<4Q', *entries))
        st, cqe = d.admin(abi.command('CREATE_CQ', abi.CmdCreateCq(
            uctx=0, eqn=d.comp_eq.eqn, log_depth=9, flags=h.CQ_F_PAGELIST, ring_addr=lst,
            dbrec_addr=0)))
        assert st == h.AQ['BAD_PARAM'], (entries, align)
        assert cqe['detail'] == h.cmd_offset('create_cq.ring_addr')
    assert d.create_cq(4).cqn == first.cqn + 1
