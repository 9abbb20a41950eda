# SPDX-License-Identifier: GPL-2.0-or-later
"""qemu tier: BlueFlame through QEMU's BAR2 (spec 3.2.1).  The test is the
guest: it puts a WQE on the SQ ring, stores it into a BF buffer of its
doorbell page with 64-bit MMIO writes, then writes the control word."""
import pytest

import qrnic_harness as h
from qtest.fixtures import qemu_binary, shared_world  # noqa: F401  (fixture)

pytestmark = pytest.mark.qemu


qworld, world = shared_world('bf')


def _counts(dev):
    return {k: dev.stat(k) for k in ('bf_posts', 'bf_fallbacks', 'doorbells_ignored')}


def test_caps_has_bf(world):
    for d in world.devs:
        assert d.reg_read('CAPS') & (1 << 13)
        assert d.reg_read('VERSION') == h.ABI_VERSION >= (1 << 16) | 5   # BF since 1.5


def test_bf_post_through_bar2(world):
    """An inline WRITE and a one-SGE SEND posted by BF arrive byte for
    byte; both are counted as BF posts, none falls back."""
    a, b = world.devs
    c = h.connect_rc(a, b, mtu=1024)
    dst = b.reg_mr(c.pdb, 4096)
    src = a.reg_mr(c.pda, 4096)
    before = _counts(a)
    c.qa.post_send('RDMA_WRITE', inline=b'BlueFlame over QEMU', remote=(dst, 100), ring=False)
    c.qa.ring_bf(buf=0)
    src.write(0, bytes(range(256)) * 2)
    c.qb.post_recv([(dst, 1024, 1024)])
    c.qa.post_send('SEND', [(src, 0, 512)], ring=False)
    c.qa.ring_bf(buf=1)
    cqes = c.cqa.wait(2)
    assert [e['status_name'] for e in cqes] == ['SUCCESS', 'SUCCESS']
    assert dst.read(100, 19) == b'BlueFlame over QEMU'
    assert c.cqb.wait(1)[0]['byte_len'] == 512
    assert dst.read(1024, 512) == bytes(range(256)) * 2
    after = _counts(a)
    assert after['bf_posts'] - before['bf_posts'] == 2
    assert after['bf_fallbacks'] == before['bf_fallbacks']


def test_bad_bf_writes_through_bar2(world):
    """Data words stored with 4-byte writes are ignored and counted (the
    control word then finds a torn copy and the device reads the ring);
    a control word naming another context's QP is ignored."""
    a, b = world.devs
    c = h.connect_rc(a, b, mtu=1024)
    dst = b.reg_mr(c.pdb, 4096)
    before = _counts(a)
    c.qa.post_send('RDMA_WRITE', inline=b'fallback', remote=(dst, 0), ring=False)
    c.qa.ring_bf(size=4)
    assert c.cqa.wait(1)[0]['status_name'] == 'SUCCESS'
    assert dst.read(0, 8) == b'fallback'
    after = _counts(a)
    assert after['bf_fallbacks'] - before['bf_fallbacks'] == 1
    assert after['bf_posts'] == before['bf_posts']
    assert after['doorbells_ignored'] - before['doorbells_ignored'] == 18   # 9 words x 2 halves
    # another context's page: ignored, nothing sent
    u = a.alloc_uctx()
    c.qa.post_send('RDMA_WRITE', inline=b'intruder', remote=(dst, 8), ring=False)
    c.qa.ring_bf(page=u)
    world.settle()
    assert dst.read(8, 8) == bytes(8)
    assert _counts(a)['doorbells_ignored'] - after['doorbells_ignored'] == 1
    c.qa.ring_sq()
    assert c.cqa.wait(1)[0]['status_name'] == 'SUCCESS'
    assert dst.read(8, 8) == b'intruder'
