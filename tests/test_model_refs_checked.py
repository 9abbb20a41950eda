# SPDX-License-Identifier: GPL-2.0-or-later
"""Payloads by reference under a host that checks its mappings.

World(dma_refs='checked') gives the devices the harness's checked
ops->dma_map/dma_unmap (hx_set_dma_refs HX_REFS_CHECKED, the fuzzers' mode,
docs/fuzzing.md): each mapping is a shadow copy, kept in a table until
dma_unmap gives it back (the process aborts on a release of one that is not
live).  With a lazy ICRC and the vouched hand-over -- what QEMU does
between its qrnic ports (hw/qrnic.c) -- RC requests' payloads travel by
reference; the data must arrive intact and every mapping must come back
once the frames are consumed.
"""
import random

import qrnic_harness as q

MTU = 1024


def statuses(cq):
    return [c['status_name'] for c in cq.poll()]


def traffic(world, rng, n):
    conn = q.connect_rc(world.devs[0], world.devs[1], mtu=MTU)
    la = conn.a.dev.reg_mr(conn.pda, n)
    rb = conn.b.dev.reg_mr(conn.pdb, n)
    src = la.fill_random(rng)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0), wr_id=1)
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS'] and rb.read() == src
    # and back: READ responses are device 1's payloads
    lc = conn.a.dev.reg_mr(conn.pda, n)
    conn.qa.post_send('RDMA_READ', [(lc, 0, n)], remote=(rb, 0), wr_id=2)
    assert world.run() == 'idle'
    assert statuses(conn.cqa) == ['SUCCESS'] and lc.read() == src


def lazy_world(vouch=True, dma_refs='checked'):
    """Two devices with a lazy ICRC, as QEMU's qrnic ports have (no frame
    log: it would fill every frame), the receiver vouched for if asked."""
    w = q.World(2, dma_refs=dma_refs, framelog=0)
    w.lazy_icrc(0)
    w.lazy_icrc(1)
    if vouch:
        w.vouch(True)
    return w


def described_all_but_spans(world, n):
    """Whether every frame delivered but at most one per page boundary
    of each direction's n-byte source (a WRITE's, a READ response's) had
    its headers by description (the harness's wire count)."""
    ws = world.wire_stats()
    return ws['described'] >= ws['delivered'] - 2 * (n // 4096) and ws['described'] > 0


def test_lazy_icrc_vouched_refs_arrive_intact_and_every_mapping_returns():
    rng = random.Random(11)
    maps0, unmaps0, live0 = q.World.dma_refs_stats()
    assert live0 == 0
    w = lazy_world()
    try:
        n = 16 * MTU
        traffic(w, rng, n)
        maps, unmaps, live = q.World.dma_refs_stats()
        # one mapping per packet at least: 16 WRITE and 16 READ response packets
        assert maps - maps0 >= 32, (maps0, maps)
        assert unmaps - unmaps0 == maps - maps0 and live == 0
        assert w.devs[1].stat('rx_drop_icrc') == 0 and w.devs[0].stat('rx_drop_icrc') == 0
        # and their headers by description: taken as parsed, never built;
        # all but a packet whose payload spans two (shuffled) pages of the
        # source MR, copied into its frame: at most one per page boundary
        assert described_all_but_spans(w, n), w.wire_stats()
    finally:
        w.close()
    assert q.World.dma_refs_stats()[2] == 0


def test_lazy_icrc_described_frames_to_a_receiver_that_checks():
    """The same frames handed to a receiver that does not take the
    sender's word (not vouched): it builds each one, headers, payload and
    ICRC, and checks the ICRC it reads -- every frame passes, the data
    lands, every mapping comes back."""
    rng = random.Random(14)
    maps0, unmaps0, _ = q.World.dma_refs_stats()
    w = lazy_world(vouch=False)
    try:
        traffic(w, rng, 16 * MTU)
        maps, unmaps, live = q.World.dma_refs_stats()
        assert maps - maps0 >= 32 and unmaps - unmaps0 == maps - maps0 and live == 0
        assert described_all_but_spans(w, 16 * MTU), w.wire_stats()
        assert w.devs[1].stat('rx_drop_icrc') == 0 and w.devs[0].stat('rx_drop_icrc') == 0
        assert w.devs[1].stat('rx_packets') >= 17 and w.devs[0].stat('rx_packets') >= 16
    finally:
        w.close()


def test_refs_survive_loss_and_corruption():
    """Dropped frames release their mappings (the buffer is freed), a
    corrupted one is filled first (the rule reads its bytes), checked and
    dropped; the retransmission maps again."""
    rng = random.Random(12)
    maps0, unmaps0, _ = q.World.dma_refs_stats()
    w = lazy_world()
    try:
        w.random_impairments(loss=0.05, corrupt=0.05, seed=3)
        traffic(w, rng, 32 * MTU)
        maps, unmaps, live = q.World.dma_refs_stats()
        assert maps - maps0 >= 64 and unmaps - unmaps0 == maps - maps0 and live == 0
    finally:
        w.close()


def test_no_dma_map_copies_payloads():
    rng = random.Random(13)
    maps0 = q.World.dma_refs_stats()[0]
    w = lazy_world(vouch=False, dma_refs='none')
    try:
        traffic(w, rng, 8 * MTU)
        assert q.World.dma_refs_stats()[0] == maps0
    finally:
        w.close()


def test_world_freed_with_frames_in_flight_returns_every_mapping():
    """Frames by reference still on the wire (a 1 ms cable) when the world
    goes: freed with it, their mappings come back."""
    rng = random.Random(14)
    maps0, unmaps0, _ = q.World.dma_refs_stats()
    w = q.World(2, dma_refs='checked', framelog=0)
    w.lazy_icrc(0)
    w.vouch(True)
    w.set_latency(1_000_000)
    conn = q.connect_rc(w.devs[0], w.devs[1], mtu=MTU)
    n = 16 * MTU
    la = conn.a.dev.reg_mr(conn.pda, n)
    rb = conn.b.dev.reg_mr(conn.pdb, n)
    la.fill_random(rng)
    conn.qa.post_send('RDMA_WRITE', [(la, 0, n)], remote=(rb, 0), wr_id=1)
    w.run(ns=100_000)
    maps, unmaps, live = q.World.dma_refs_stats()
    assert maps > maps0 and live > 0, (maps0, maps, live)
    w.close()
    maps, unmaps, live = q.World.dma_refs_stats()
    assert live == 0 and unmaps - unmaps0 == maps - maps0
