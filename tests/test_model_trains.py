# SPDX-License-Identifier: GPL-2.0-or-later
"""Trains between two devices of the harness (qrnic_dev_set_trains).

With a lazy ICRC, payloads by reference (the harness's checked mappings)
and the vouched hand-over -- what QEMU does between its qrnic ports
(hw/qrnic.c) -- the packets of an RC WRITE leave as one frame buffer (a
train); the harness's wire hands it over whole while nothing reads frames
(hx_set_trains).  These tests check what the qemu tier cannot reach at a
chosen instant: a train sitting in the receiver's queue when the receiver
is saved (model/snap_qp.c splits it into the frames it stands for).
"""
import random

import qrnic_harness as q

SIZE = 1 << 16          # 16 packets of 4096: one train
TRAIN_MAX = 32          # QRNIC_TRAIN_MAX (model/qrnic_internal.h)


def world(trains=True, latency=100_000):
    w = q.World(2, dma_refs='checked', framelog=0)
    for d in (0, 1):
        w.lazy_icrc(d)
        w.trains(d, trains)
    w.vouch(True)
    w.set_latency(latency)      # frames in flight long enough to stop there
    return w


def post_write(w, seed, size=SIZE):
    """Post a WRITE of size bytes; return what is needed to check it and
    the frames the sender put on the wire for it (counted 1 us after the
    first left: the whole message, no ACK back yet at this latency)."""
    conn = q.connect_rc(w.devs[0], w.devs[1], mtu=4096)
    la = conn.a.dev.reg_mr(conn.pda, size, contig=True)
    rb = conn.b.dev.reg_mr(conn.pdb, size)
    src = la.fill_random(random.Random(seed))
    tx0 = w.wire_stats()['tx']
    conn.qa.post_send('RDMA_WRITE', [(la, 0, size)], remote=(rb, 0), wr_id=1)
    for _ in range(1000):               # until the sender has sent
        if w.wire_stats()['tx'] > tx0:
            break
        w.advance(10)
    w.advance(1000)
    return conn, rb, src, w.wire_stats()['tx'] - tx0


def test_train_goes_whole_and_lands():
    """A 64 KiB WRITE leaves as one train (one frame on the wire for its
    16 packets) and lands byte for byte; without trains, 16 frames.  A
    WRITE of a full train (32 packets: the requester's step sends that
    many where trains may form, model/qp.c) is one frame too, one of 48
    packets two."""
    assert 2 * SIZE == TRAIN_MAX * 4096
    for size, trains, frames in ((SIZE, True, 1), (SIZE, False, 16),
                                 (2 * SIZE, True, 1), (2 * SIZE, False, 2 * 16),
                                 (3 * SIZE, True, 2)):
        w = world(trains)
        conn, rb, src, sent = post_write(w, 3, size)
        assert w.run() == 'idle'
        assert sent == frames, (size, trains, sent)
        assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
        assert rb.read() == src
        assert q.World.dma_refs_stats()[2] == 0
        w.close()


def test_train_in_the_receive_queue_survives_a_snapshot():
    """The train arrives in the receiver's queue and the receiver is saved,
    freed, made anew and loaded before it runs (hx_dev_snapshot): the save
    splits the train into its 16 frames, which the new device takes one by
    one.  The bytes land, the WRITE completes, every mapping comes back."""
    w = world()
    conn, rb, src, sent = post_write(w, 7)
    assert sent == 1, 'the WRITE did not leave as a train'
    assert w.wire_land() == 1
    work = q.snap_sections(w.devs[1].save())['WORK'][1]
    assert len(work) > SIZE, 'the saved receive queue does not hold the payload'
    w.devs[1].snapshot()
    assert w.run() == 'idle'
    assert [c['status_name'] for c in conn.cqa.poll()] == ['SUCCESS']
    assert rb.read() == src
    assert w.devs[1].query_stats()['rx_drop_icrc'] == 0
    st = w.devs[0].query_stats()
    assert st['retransmitted_packets'] == 0 and st['retransmit_timeouts'] == 0, \
        'packets of the train were lost in the snapshot and sent again'
    w.close()
    assert q.World.dma_refs_stats()[2] == 0, 'a mapping was not given back'
