# SPDX-License-Identifier: GPL-2.0-or-later
"""Admin queue: bring-up, queries, object life cycle, validation of every
command field, QP state machine, AQ error state, reset."""
import random
import struct

import pytest

import qrnic_harness as q
from qrnic_harness import AQ, CMD


def st_of(fn, *a, **kw):
    """Status of an admin helper called with check=False semantics."""
    try:
        fn(*a, **kw)
        return 0
    except q.AdminError as e:
        return e.status


# ---- bring-up and queries --------------------------------------------------------
def test_bringup_registers(world):
    for d in world.devs:
        assert d.reg_read('VERSION') == q.ABI_VERSION
        st = d.reg_read('STATUS')
        assert st & q.STATUS_READY and st & q.STATUS_ENABLED and not st & q.STATUS_FATAL
        aqs = d.reg_read('AQ_STATUS')
        assert aqs & q.AQ_STATUS_ENABLED and not aqs & q.AQ_STATUS_ERROR
        assert d.reg_read('AQ_SQ_CI') == d.aq_indexes()[0]
        assert d.reg_read('CAPS') == d.attr['caps']
        assert d.reg_read('NUM_VECTORS') == d.attr['num_vectors']
        assert d.reg_read('ETH_MTU') == 4200
        assert d.reg_read('PORT_STATUS') & 1
        d.reg_write('SCRATCH', 0xa5a5_1234)
        assert d.reg_read('SCRATCH') == 0xa5a5_1234


def test_fresh_device_register_reset_values():
    with q.World(1, init=False) as w:
        d = w.devs[0]
        assert d.reg_read('CTRL') == 0
        assert d.reg_read('STATUS') == q.STATUS_READY
        for r in ('AQ_SQ_BASE_LO', 'AQ_SQ_BASE_HI', 'AQ_CQ_BASE_LO', 'AQ_CQ_BASE_HI',
                  'AQ_CTRL', 'AQ_SQ_CI', 'AQ_STATUS', 'SCRATCH', 'ETH_CTRL'):
            assert d.reg_read(r) == 0, r


def test_query_device_and_port(world):
    d = world.devs[0]
    a = d.query_device()
    assert a['abi_version'] == q.ABI_VERSION
    assert a['max_sge'] == q.MAX_SGE
    assert a['mac'] == d.mac
    assert a['caps'] & 0x7 == 0x7          # RC, UD, atomics
    assert a['max_qp'] >= 4 and a['max_cq'] >= 1 and a['max_mr'] >= 1
    assert a['page_size_cap'] & (1 << 12)
    p = d.query_port(1)
    assert p['state'] == 4 and p['phys_state'] == 5   # ACTIVE, LinkUp
    assert p['mac'] == d.mac
    assert p['eth_mtu'] == 4200
    assert p['active_mtu'] == q.MTU[4096]


def test_query_truncated_to_resp_len(world):
    d = world.devs[0]
    scratch = d._l.hx_scratch(d.w, d.idx)
    d.mem_write(scratch, b'\xee' * 64)
    cmd = struct.pack('<BBHIQII', CMD['QUERY_DEVICE'], 0, 7, 0, scratch, 8, 0)
    st, cqe = d.admin(cmd)
    assert st == 0 and cqe['cmd_id'] != 0
    got = d.mem_read(scratch, 64)
    assert got[:4] == struct.pack('<I', q.ABI_VERSION)
    assert got[8:] == b'\xee' * 56, 'device wrote beyond resp_len'


def test_query_port_bad_port(world):
    d = world.devs[0]
    assert st_of(d.query_port, 2) == AQ['BAD_PARAM']
    assert st_of(d.query_port, 0) == AQ['BAD_PARAM']


def test_query_stats_agree_with_host_counters(world):
    d = world.devs[0]
    s = d.query_stats()
    h = d.stats()
    assert set(s) == set(h)
    assert s['admin_cmds'] >= 5
    assert h['admin_cmds'] == s['admin_cmds'] + 0 or h['admin_cmds'] == s['admin_cmds'] + 1


def test_gid_set_query_clear(world):
    d = world.devs[0]
    g = q.gid_v6('fd00::1234:5678')
    d.set_gid(5, g)
    assert d.query_gid(5) == g
    assert d.query_gid(0) == q.gid_v4('10.0.0.1')
    d.set_gid(5, g, valid=False)
    g5 = d.query_gid(5, check=False)
    assert g5 is None or g5 != g
    tbl = d.attr['gid_tbl_len']
    assert d.set_gid(tbl, g, check=False) == AQ['BAD_PARAM']
    assert d.set_gid(0, g, net_type=7, check=False) == AQ['BAD_PARAM']


def test_command_id_and_opcode_echoed(world):
    d = world.devs[0]
    st, cqe = d.admin(struct.pack('<BBHI', CMD['CREATE_PD'], 0, 0xbeef, 0), raw=True)
    assert st == 0
    assert cqe['cmd_id'] == 0xbeef and cqe['opcode'] == CMD['CREATE_PD']
    assert cqe['result'][0] > 0
    pi, ci = d.aq_indexes()
    assert cqe['sq_ci'] == pi


# ---- object life cycle -----------------------------------------------------------------
def test_create_destroy_every_object(world):
    d, peer = world.devs
    uctx = d.alloc_uctx()
    assert uctx > 0
    pd = d.alloc_pd()
    pd_u = d.alloc_pd(uctx)
    eq = d.create_eq(4, vector=3)
    cq = d.create_cq(4, eq=eq)
    qp = d.create_qp(pd, cq)
    ud = d.create_qp(pd, cq, qp_type='UD')
    mr = d.reg_mr(pd, 10000)
    ah = d.ah_to(pd, peer)
    assert qp.query()['state_name'] == 'RESET'
    assert mr.query()['key'] == mr.key and mr.query()['length'] == 10000
    # handles are distinct and non-zero
    assert pd.pdn != pd_u.pdn and 0 not in (pd.pdn, eq.eqn, cq.cqn, ah.ahn)
    assert qp.qpn >= 2 and ud.qpn >= 2 and qp.qpn != ud.qpn
    for obj in (ah, ud, qp):
        obj.destroy()
    mr.dereg()
    cq.destroy()
    eq.destroy()
    pd.destroy()
    pd_u.destroy()
    d.destroy('DEALLOC_UCTX', uctx)
    # second destroy of each: BAD_HANDLE
    for op, h in (('DESTROY_AH', ah.ahn), ('DESTROY_QP', qp.qpn), ('DEREG_MR', mr.key),
                  ('DESTROY_CQ', cq.cqn), ('DESTROY_EQ', eq.eqn), ('DESTROY_PD', pd.pdn),
                  ('DEALLOC_UCTX', uctx)):
        assert d.destroy(op, h, check=False) == AQ['BAD_HANDLE'], op


@pytest.mark.parametrize('op', ['DESTROY_PD', 'DESTROY_CQ', 'DESTROY_QP', 'DEREG_MR',
                                'DESTROY_AH', 'DESTROY_EQ', 'DEALLOC_UCTX'])
@pytest.mark.parametrize('handle', [0, 0xffff, 0xffffff, 0xffffffff, 0x80000000])
def test_destroy_handle_out_of_range(world, op, handle):
    assert world.devs[0].destroy(op, handle, check=False) == AQ['BAD_HANDLE']


def test_uctx0_cannot_be_deallocated_and_qp1_is_gsi(world):
    d = world.devs[0]
    assert d.destroy('DEALLOC_UCTX', 0, check=False) != 0
    pd = d.alloc_pd()
    cq = d.create_cq(4)
    gsi = d.create_qp(pd, cq, qp_type='GSI')
    assert gsi.qpn == 1
    assert d.create_qp(pd, cq, qp_type='GSI', check=False) is None


def test_destroy_in_use_is_busy(world):
    d, peer = world.devs
    pd = d.alloc_pd()
    eq = d.create_eq(4, vector=3)
    cq = d.create_cq(4, eq=eq)
    qp = d.create_qp(pd, cq)
    assert d.destroy('DESTROY_PD', pd.pdn, check=False) == AQ['BUSY']
    assert d.destroy('DESTROY_CQ', cq.cqn, check=False) == AQ['BUSY']
    assert d.destroy('DESTROY_EQ', eq.eqn, check=False) == AQ['BUSY']
    qp.destroy()
    mr = d.reg_mr(pd, 4096)
    assert d.destroy('DESTROY_PD', pd.pdn, check=False) == AQ['BUSY']
    mr.dereg()
    ah = d.ah_to(pd, peer)
    assert d.destroy('DESTROY_PD', pd.pdn, check=False) == AQ['BUSY']
    ah.destroy()
    assert d.destroy('DESTROY_EQ', eq.eqn, check=False) == AQ['BUSY']
    cq.destroy()
    eq.destroy()
    pd.destroy()
    uctx = d.alloc_uctx()
    pdu = d.alloc_pd(uctx)
    assert d.destroy('DEALLOC_UCTX', uctx, check=False) == AQ['BUSY']
    pdu.destroy()
    d.destroy('DEALLOC_UCTX', uctx)


def test_create_with_bad_references(world):
    d = world.devs[0]
    pd = d.alloc_pd()
    cq = d.create_cq(4)
    assert st_of(d.alloc_pd, 999) == AQ['BAD_HANDLE']                  # no such uctx
    assert st_of(d.create_cq, 4, eq=999) == AQ['BAD_HANDLE']          # no such EQ
    assert st_of(d.create_qp, 999, cq) == AQ['BAD_HANDLE']            # no such PD
    assert st_of(d.create_qp, pd, 999) == AQ['BAD_HANDLE']            # no such CQ
    assert st_of(d.create_qp, pd, cq, 999) == AQ['BAD_HANDLE']
    assert st_of(d.reg_mr, 999, 4096) == AQ['BAD_HANDLE']
    assert st_of(d.create_ah, 999, '10.0.0.2', b'\2\0\0\0\0\2') == AQ['BAD_HANDLE']


def test_table_full_gives_no_resources():
    with q.World(1, cfg='max_pd=4,max_cq=4') as w:
        d = w.devs[0]
        pds = []
        while True:
            pd = d.alloc_pd(check=False)
            if pd is None:
                break
            pds.append(pd)
            assert len(pds) < 10
        assert d.last_cqe()['status'] == AQ['NO_RESOURCES']
        assert 1 <= len(pds) <= 4
        pds[0].destroy()
        assert d.alloc_pd() is not None


def test_mtt_exhaustion_gives_no_resources():
    with q.World(1, cfg='max_mtt=64') as w:
        d = w.devs[0]
        pd = d.alloc_pd()
        assert st_of(d.reg_mr, pd, 65 * 4096) == AQ['NO_RESOURCES']
        mr = d.reg_mr(pd, 40 * 4096)
        assert st_of(d.reg_mr, pd, 30 * 4096) == AQ['NO_RESOURCES']
        mr.dereg()
        d.reg_mr(pd, 60 * 4096)


# ---- field validation --------------------------------------------------------------------
@pytest.mark.parametrize('opcode', [0x00, CMD_MAX_PLUS := q.CMD_MAX + 1, 0x7f, 0x80, 0xff])
def test_bad_opcode(world, opcode):
    st, cqe = world.devs[0].admin(bytes([opcode]) + b'\0' * 127)
    assert st == AQ['BAD_OPCODE']
    assert cqe['opcode'] == opcode


RESERVED = [
    ('hdr.flags', 'alloc_pd', 1),
    ('hdr.flags', 'create_cq', 0x80),
    ('create_cq.rsvd', 'create_cq', 1),
    ('create_qp.rsvd0', 'create_qp', 1),
    ('reg_mr.rsvd', 'reg_mr', 1),
    ('reg_mr.rsvd2', 'reg_mr', 1),
    ('modify_qp.rsvd', 'modify_qp', 1),
    ('create_ah.rsvd', 'create_ah', 1),
    ('create_eq.rsvd0', 'create_eq', 1),
    ('gid.rsvd', 'set_gid', 1),
]


@pytest.mark.parametrize('field,helper,value', RESERVED, ids=[f'{r[1]}-{r[0]}' for r in RESERVED])
def test_reserved_fields_rejected(world, field, helper, value):
    d, peer = world.devs
    pd = d.alloc_pd()
    cq = d.create_cq(4)
    qp = d.create_qp(pd, cq)
    d.patch_next_cmd(field, value)
    calls = {
        'alloc_pd': lambda: d.alloc_pd(),
        'create_cq': lambda: d.create_cq(4),
        'create_qp': lambda: d.create_qp(pd, cq),
        'reg_mr': lambda: d.reg_mr(pd, 4096),
        'modify_qp': lambda: qp.to_init(),
        'create_ah': lambda: d.ah_to(pd, peer),
        'create_eq': lambda: d.create_eq(4, vector=3),
        'set_gid': lambda: d.set_gid(7, 'fd00::7'),
    }
    assert st_of(calls[helper]) == AQ['BAD_PARAM']
    # and the same command without the patch works
    calls[helper]()


def test_oversized_counts_rejected(world):
    d = world.devs[0]
    pd = d.alloc_pd()
    cq = d.create_cq(4)
    nv = d.attr['num_vectors']
    BP = AQ['BAD_PARAM']
    assert st_of(d.create_cq, 0) == BP
    assert st_of(d.create_cq, 23) == BP       # > QRNIC_MAX_QUEUE_LOG (22)
    assert st_of(d.create_cq, 255) == BP
    assert st_of(d.create_eq, 0, vector=3) == BP
    assert st_of(d.create_eq, 23, vector=3) == BP
    assert st_of(d.create_eq, 4, vector=nv) == BP
    assert st_of(d.create_eq, 4, vector=0xffff) == BP
    assert st_of(d.create_qp, pd, cq, sq_log=16) == BP
    assert st_of(d.create_qp, pd, cq, rq_log=16) == BP
    assert st_of(d.create_qp, pd, cq, sq_shift=5) == BP
    assert st_of(d.create_qp, pd, cq, sq_shift=11) == BP
    assert st_of(d.create_qp, pd, cq, rq_shift=4) == BP
    assert st_of(d.create_qp, pd, cq, rq_shift=10) == BP
    assert st_of(d.create_qp, pd, cq, qp_type=8) == BP     # RAW_PACKET
    assert st_of(d.create_qp, pd, cq, qp_type=1) == BP
    assert st_of(d.create_qp, pd, cq, sq_log=0, sq_shift=0) in (BP, 0)
    assert st_of(d.reg_mr, pd, 4096, page_shift=11) == BP
    assert st_of(d.reg_mr, pd, 4096, page_shift=31) == BP
    assert st_of(d.reg_mr, pd, 0) == BP
    assert st_of(d.reg_mr, pd, 4096, access=0x20) == BP   # 0x10: MW_BIND (ABI 1.2)
    d.patch_next_cmd('reg_mr.length', d.attr['max_mr_size'] + 1)
    assert st_of(d.reg_mr, pd, 4096) == BP
    d.patch_next_cmd('reg_mr.pbl_levels', 4)
    assert st_of(d.reg_mr, pd, 4096) == BP
    # QP depth beyond max_qp_wr
    mw = d.attr['max_qp_wr']
    if mw < (1 << 15):
        assert st_of(d.create_qp, pd, cq, sq_log=mw.bit_length()) == BP


@pytest.mark.parametrize('delta', [-1, 1, 1000, -0x80000000])
def test_reg_mr_npages_mismatch(world, delta):
    d = world.devs[0]
    pd = d.alloc_pd()
    npages = 3     # 8192 bytes at an iova with offset 8: spans 3 pages
    d.patch_next_cmd('reg_mr.npages', (npages + delta) & 0xffffffff)
    assert st_of(d.reg_mr, pd, 8192, iova=0x10000008) == AQ['BAD_PARAM']
    assert d.reg_mr(pd, 8192, iova=0x10000008) is not None


def test_reg_mr_pbl_level_too_small_for_npages(world):
    """A 1-level PBL holds 512 pages: 600 pages with pbl_levels=1 is invalid."""
    d = world.devs[0]
    pd = d.alloc_pd()
    assert st_of(d.reg_mr, pd, 600 * 4096, levels=1) == AQ['BAD_PARAM']
    assert st_of(d.reg_mr, pd, 600 * 4096, levels=2) == 0


def test_reg_mr_pbl_unreachable_is_dma_error(world):
    d = world.devs[0]
    pd = d.alloc_pd()
    d.patch_next_cmd('reg_mr.pbl_addr', 0xdead_0000_0000)
    assert st_of(d.reg_mr, pd, 3 * 4096) == AQ['DMA_ERROR']
    st = d.reg_read('STATUS')
    assert not st & q.STATUS_FATAL


def test_reg_mr_unaligned_pages_rejected(world):
    """PBL entries must be page aligned."""
    d = world.devs[0]
    pd = d.alloc_pd()
    mr = d.reg_mr(pd, 2 * 4096, levels=1)
    pbl = d.mem_alloc(4096)
    d.mem_write(pbl, struct.pack('<QQ', mr.bus_addr(0) - mr.iova % 4096 + 8, mr.bus_addr(4096)))
    d.patch_next_cmd('reg_mr.pbl_addr', pbl)
    assert st_of(d.reg_mr, pd, 2 * 4096, iova=0x20000000, levels=1) == AQ['BAD_PARAM']


def test_random_garbage_commands(world):
    """300 commands of random bytes (random opcode in range half the time):
    each gets a completion with a defined status and the AQ keeps working."""
    d = world.devs[0]
    rng = random.Random(1234)
    for i in range(300):
        cmd = bytearray(rng.randbytes(128))
        if i % 2:
            cmd[0] = rng.randint(1, q.CMD_MAX)
        if i % 4 == 1:
            cmd[1] = 0
        st, cqe = d.admin(bytes(cmd), raw=True)
        assert 0 <= st <= q.AQ['INJECTED'], (i, st)
        assert cqe['cmd_id'] == int.from_bytes(cmd[2:4], 'little')
        assert cqe['opcode'] == cmd[0]
        if cmd[1] != 0:
            assert st != 0, 'nonzero header flags must be rejected'
    assert d.reg_read('AQ_STATUS') == q.AQ_STATUS_ENABLED
    assert not d.reg_read('STATUS') & q.STATUS_FATAL
    conn = q.connect_rc(*world.devs)
    ma, mb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    ma.write(0, b'still works')
    conn.qa.post_send('RDMA_WRITE', [(ma, 0, 11)], remote=(mb, 0))
    world.run()
    assert [c['status'] for c in conn.cqa.poll()] == [0]
    assert mb.read(0, 11) == b'still works'


# ---- QP state machine ----------------------------------------------------------------
def _qp(world):
    d = world.devs[0]
    pd = d.alloc_pd()
    cq = d.create_cq(4)
    return d, d.create_qp(pd, cq)


def test_qp_bad_transitions(world):
    d, qp = _qp(world)
    peer = world.devs[1]
    BS = AQ['BAD_STATE']
    assert qp.modify('RTR', check=False) in (BS, AQ['BAD_ATTR_MASK'])
    assert qp.modify('RTS', sq_psn=0, timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=1,
                     check=False) == BS
    assert qp.modify('SQD', check=False) == BS
    assert qp.modify(9, check=False) in (BS, AQ['BAD_PARAM'])
    qp.to_init()
    assert qp.to_rts(check=False) == BS
    qp.to_rtr(peer, 5)
    assert qp.to_init(check=False) == BS
    qp.to_rts()
    assert qp.state == 'RTS'
    assert qp.to_rtr(peer, 5, check=False) == BS
    # cur_qp_state that does not match
    assert qp.modify('RTS', cur_qp_state=q.QPS['INIT'], check=False) in (BS, AQ['BAD_PARAM'])
    qp.modify('ERR')
    assert qp.state == 'ERR'
    assert qp.to_init(check=False) == BS
    qp.modify('RESET')
    assert qp.state == 'RESET'
    qp.to_init()


def test_qp_bad_attr_masks(world):
    d, qp = _qp(world)
    peer = world.devs[1]
    BM = AQ['BAD_ATTR_MASK']
    # RESET->INIT requires PKEY_INDEX, PORT, ACCESS_FLAGS
    assert qp.modify('INIT', port_num=1, qp_access_flags=0, check=False) == BM
    assert qp.modify('INIT', pkey_index=0, port_num=1, qp_access_flags=0, sq_psn=1,
                     check=False) == BM
    qp.to_init()
    gid, nt = peer.gids[0]
    av = q.make_av(gid, peer.mac, nt)
    # INIT->RTR requires AV, PATH_MTU, DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC, MIN_RNR_TIMER
    assert qp.modify('RTR', av=av, path_mtu=3, dest_qpn=5, rq_psn=0, max_dest_rd_atomic=1,
                     check=False) == BM
    assert qp.modify('RTR', av=av, path_mtu=3, rq_psn=0, max_dest_rd_atomic=1,
                     min_rnr_timer=1, check=False) == BM
    # RTR->RTS with an attribute only allowed earlier
    qp.to_rtr(peer, 5)
    assert qp.modify('RTS', sq_psn=0, timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=1,
                     path_mtu=3, check=False) == BM
    assert qp.modify('RTS', timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=1,
                     check=False) == BM
    # mask without STATE: a modify with no state change of an illegal attribute
    assert qp.modify(mask=q.QP_ATTR['DEST_QPN'], dest_qpn=9, check=False) in (BM, AQ['BAD_STATE'])
    # unknown mask bits
    assert qp.modify('RTS', mask=(1 << 31) | q.QP_ATTR['STATE'] | q.QP_ATTR['SQ_PSN'],
                     check=False) in (BM, AQ['BAD_PARAM'])


def test_qp_attr_ranges(world):
    d, qp = _qp(world)
    peer = world.devs[1]
    qp.to_init()
    gid, nt = peer.gids[0]
    av = q.make_av(gid, peer.mac, nt)
    base = dict(av=av, path_mtu=3, dest_qpn=5, rq_psn=0, max_dest_rd_atomic=1, min_rnr_timer=1)
    BP = AQ['BAD_PARAM']
    for k, v in (('path_mtu', 0), ('path_mtu', 6), ('min_rnr_timer', 32),
                 ('max_dest_rd_atomic', 200), ('rq_psn', 1 << 24), ('dest_qpn', 1 << 24)):
        attrs = dict(base, **{k: v})
        assert qp.modify('RTR', check=False, **attrs) == BP, (k, v)
    bad_av = q.make_av(gid, peer.mac, nt, sgid_index=200)
    assert qp.modify('RTR', check=False, **dict(base, av=bad_av)) == BP
    qp.to_rtr(peer, 5)
    rts = dict(sq_psn=0, timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=1)
    for k, v in (('retry_cnt', 8), ('rnr_retry', 8), ('timeout', 32), ('sq_psn', 1 << 24),
                 ('max_rd_atomic', 200)):
        assert qp.modify('RTS', check=False, **dict(rts, **{k: v})) == BP, (k, v)


def test_query_qp_reflects_modify(world):
    conn = q.connect_rc(*world.devs, mtu=2048, psn_a=0x123456, psn_b=0xabcdef, timeout=12,
                        retry_cnt=5, rnr_retry=3, min_rnr_timer=9, max_rd_atomic=2,
                        max_dest_rd_atomic=3)
    a = conn.qa.query()
    assert a['state_name'] == 'RTS'
    assert a['path_mtu'] == q.MTU[2048]
    assert a['dest_qpn'] == conn.qb.qpn
    assert a['sq_psn'] == 0x123456 and a['rq_psn'] == 0xabcdef
    assert (a['timeout'], a['retry_cnt'], a['rnr_retry']) == (12, 5, 3)
    assert a['min_rnr_timer'] == 9
    assert a['max_rd_atomic'] == 2 and a['max_dest_rd_atomic'] == 3
    assert a['av']['dgid'] == world.devs[1].gids[0][0]
    assert a['av']['dmac'] == world.devs[1].mac
    assert a['qp_access_flags'] == q.ACCESS_REMOTE


def test_query_qp_bad_handle(world):
    d = world.devs[0]
    assert d._l.hx_query_qp(d.w, 0, 12345, None) == AQ['BAD_HANDLE']


# ---- AQ error state and resets ---------------------------------------------------------
def test_aq_producer_index_jump_sets_error(world):
    d = world.devs[0]
    pi, ci = d.aq_indexes()
    depth = 1 << 5
    d.reg_write('AQ_SQ_DB', pi + depth + 3)
    world.run()
    assert d.reg_read('AQ_STATUS') & q.AQ_STATUS_ERROR
    assert d.reg_read('AQ_SQ_CI') == ci
    # further doorbells are ignored, nothing completes
    world.set_admin_timeout(10_000_000)
    st, _ = d.admin(struct.pack('<BBHI', CMD['CREATE_PD'], 0, 0, 0))
    assert st == q.E_TIMEOUT
    # disabling clears the error; a fresh bring-up works
    d.reg_write('AQ_CTRL', 0)
    assert not d.reg_read('AQ_STATUS') & q.AQ_STATUS_ERROR
    d.forget()
    d.bringup()          # objects (EQs...) survive an AQ disable: only the AQ again
    assert d.alloc_pd() is not None


@pytest.mark.parametrize('log', [0, 13, 15])
def test_aq_bad_depth_sets_error(log):
    with q.World(1, init=False) as w:
        d = w.devs[0]
        base = d.mem_alloc(1 << 20)
        d.reg_write('AQ_SQ_BASE_LO', base & 0xffffffff)
        d.reg_write('AQ_SQ_BASE_HI', base >> 32)
        d.reg_write('AQ_CQ_BASE_LO', (base + (1 << 19)) & 0xffffffff)
        d.reg_write('AQ_CQ_BASE_HI', base >> 32)
        d.reg_write('AQ_CTRL', log | q.AQ_CTRL_ENABLE)
        d.reg_write('CTRL', q.CTRL_ENABLE)
        w.run()
        assert d.reg_read('AQ_STATUS') & q.AQ_STATUS_ERROR


def test_aq_unaligned_base_sets_error():
    with q.World(1, init=False) as w:
        d = w.devs[0]
        base = d.mem_alloc(1 << 16) + 0x80
        for r, v in (('AQ_SQ_BASE_LO', base), ('AQ_CQ_BASE_LO', base + 0x8000)):
            d.reg_write(r, v & 0xffffffff)
        d.reg_write('AQ_SQ_BASE_HI', base >> 32)
        d.reg_write('AQ_CQ_BASE_HI', base >> 32)
        d.reg_write('AQ_CTRL', 4 | q.AQ_CTRL_ENABLE)
        d.reg_write('CTRL', q.CTRL_ENABLE)
        w.run()
        assert d.reg_read('AQ_STATUS') & q.AQ_STATUS_ERROR


def _traffic_ok(world):
    conn = q.connect_rc(*world.devs)
    ma, mb = conn.a.dev.reg_mr(conn.pda, 4096), conn.b.dev.reg_mr(conn.pdb, 4096)
    data = ma.fill_random(random.Random(5), 0, 3000)
    conn.qa.post_send('RDMA_WRITE', [(ma, 0, 3000)], remote=(mb, 0))
    world.run()
    assert [c['status'] for c in conn.cqa.poll()] == [0]
    assert mb.read(0, 3000) == data


@pytest.mark.parametrize('how', ['ctrl_reset', 'flr'])
def test_device_works_after_reset(world, how):
    d = world.devs[0]
    conn = q.connect_rc(*world.devs)
    old_pd = conn.pda.pdn
    old_qp = conn.qa.qpn
    if how == 'ctrl_reset':
        d.reg_write('CTRL', q.CTRL_RESET)
        assert d.reg_read('CTRL') & q.CTRL_RESET == 0
        world.run()
        d.forget()
    else:
        d.flr()
    assert d.reg_read('STATUS') == q.STATUS_READY
    assert d.reg_read('AQ_STATUS') == 0
    assert d.reg_read('AQ_CTRL') == 0
    d.init()
    # old objects are gone
    assert d.destroy('DESTROY_QP', old_qp, check=False) == AQ['BAD_HANDLE']
    pds = [d.alloc_pd() for _ in range(2)]
    assert old_pd in [p.pdn for p in pds] or all(p.pdn for p in pds)
    _traffic_ok(world)


def test_command_before_aq_enable_is_not_executed():
    """pvrdma CVE-2022-1050 class: commands reaching the device before it is set up."""
    with q.World(1, init=False) as w:
        d = w.devs[0]
        w.set_admin_timeout(10_000_000)
        assert d._l.hx_drv_aq_alloc(d.w, 0, 4) == 0
        sq, cq = d.aq_addr(), d.aq_addr(cq=True)
        d.reg_write('AQ_SQ_BASE_LO', sq & 0xffffffff)
        d.reg_write('AQ_SQ_BASE_HI', sq >> 32)
        d.reg_write('AQ_CQ_BASE_LO', cq & 0xffffffff)
        d.reg_write('AQ_CQ_BASE_HI', cq >> 32)
        d.reg_write('AQ_CTRL', 4)          # depth but not enabled
        d.reg_write('CTRL', q.CTRL_ENABLE)
        st, _ = d.admin(struct.pack('<BBHI', CMD['CREATE_PD'], 0, 0, 0))
        assert st == q.E_TIMEOUT
        assert d.reg_read('AQ_SQ_CI') == 0
        assert d.mem_read(cq, 32) == b'\0' * 32
        assert w.run() == 'idle'
        # device not enabled at all: also nothing
        d.reg_write('CTRL', 0)
        d.reg_write('AQ_CTRL', 4 | q.AQ_CTRL_ENABLE)
        d.reg_write('AQ_SQ_DB', 1)
        w.run()
        assert d.mem_read(cq, 32) == b'\0' * 32
        # a proper bring-up afterwards works
        d.forget()
        d.init()
        assert d.alloc_pd() is not None


def test_aq_ring_outside_ram_is_defined_error():
    """Admin rings pointing outside host memory: a defined error, no crash."""
    with q.World(1, init=False) as w:
        d = w.devs[0]
        bad = 0x7000_0000_0000
        d.reg_write('AQ_SQ_BASE_LO', 0)
        d.reg_write('AQ_SQ_BASE_HI', bad >> 32)
        d.reg_write('AQ_CQ_BASE_LO', 0)
        d.reg_write('AQ_CQ_BASE_HI', (bad >> 32) + 1)
        d.reg_write('AQ_CTRL', 4 | q.AQ_CTRL_ENABLE)
        d.reg_write('CTRL', q.CTRL_ENABLE)
        d.reg_write('AQ_SQ_DB', 1)
        assert w.run() == 'idle'
        st = d.reg_read('STATUS')
        aqs = d.reg_read('AQ_STATUS')
        assert (st & q.STATUS_FATAL and d.reg_read('FATAL_CODE') in (1, 3)) or \
            aqs & q.AQ_STATUS_ERROR
        d.reg_write('CTRL', q.CTRL_RESET)
        w.run()
        d.forget()
        d.init()
        assert d.alloc_pd() is not None
