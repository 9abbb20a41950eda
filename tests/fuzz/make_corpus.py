#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Write the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/).

The inputs follow the record format of tests/fuzz/fuzz_common.h (kind,
16-bit body length, body) and the body layouts of fuzz_rx.c, fuzz_guest.c
and fz_frame()/fz_traffic() in fuzz_common.c.  Each seed reaches one main
path with valid values: an RDMA WRITE, a READ request, SENDs, ACK/NAK and
READ responses for device 1's own requests, a UD send, atomics; admin
command sequences, a post + doorbell, resets, DMA faults.

    /usr/bin/python3 tests/fuzz/make_corpus.py      # rewrites the corpora
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

OPCODES = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b,
           0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x64, 0x65]
OP = {'SEND_FIRST': 0x00, 'SEND_MIDDLE': 0x01, 'SEND_LAST': 0x02, 'SEND_ONLY': 0x04,
      'WRITE_FIRST': 0x06, 'WRITE_MIDDLE': 0x07, 'WRITE_LAST': 0x08, 'WRITE_ONLY': 0x0a,
      'WRITE_ONLY_IMM': 0x0b, 'READ_REQ': 0x0c, 'READ_RESP_FIRST': 0x0d,
      'READ_RESP_LAST': 0x0f, 'READ_RESP_ONLY': 0x10, 'ACK': 0x11, 'ATOMIC_ACK': 0x12,
      'CMP_SWAP': 0x13, 'FETCH_ADD': 0x14, 'UD_SEND_ONLY': 0x64}
# fz_traffic opcodes (QRNIC_WR_*)
WR = {'WRITE': 0, 'WRITE_IMM': 1, 'SEND': 2, 'SEND_IMM': 3, 'READ': 4, 'CAS': 5, 'FADD': 6}


def rec(kind, body):
    return struct.pack('<BH', kind, len(body)) + body


# ---- fuzz_rx ------------------------------------------------------------------------
def frame(op, tgt=0, fl=0x04, mode=0, mut=0, delta=0, off=0, length=0, raw=0, raw2=0,
          keysel=0, syn=0, a=0, b=0, trunc=0, xors=(), payload=b''):
    """A fz_frame() record body."""
    body = struct.pack('<BBBBBhHHIIBBQQB', OPCODES.index(op), tgt, fl, mode, mut, delta, off,
                       length, raw, raw2, keysel, syn, a, b, trunc)
    xs = list(xors) + [(0, 0)] * (7 - len(xors))
    for pos, mask in xs:
        body += struct.pack('<HB', pos, mask)
    return body + payload


def rx_frame(*a, kind=1, **k):
    return rec(kind, frame(*a, **k))


def rx_run(exp=20, iters=4000):
    return rec(4, struct.pack('<BH', exp, iters))


def traffic(d, op, s=0, fl=0, ms=0, rs=0, off=0, length=64, roff=0, a=0):
    return struct.pack('<BBBBBBHHHQ', d, s, WR[op], fl, ms, rs, off, length, roff, a)


# after device 1 posted a request: let it send (one instant; the peer's
# answer is a wire latency away) before the injected answer
SENT = rx_run(0, 2)


def rx_corpus():
    pay = bytes(range(256))
    seeds = {
        'write_only': rx_frame(OP['WRITE_ONLY'], length=64, payload=pay[:64]) + rx_run(),
        'write_multi': (rx_frame(OP['WRITE_FIRST'], length=600, payload=pay) +
                        rx_frame(OP['WRITE_MIDDLE'], payload=pay) +
                        rx_frame(OP['WRITE_LAST'], length=88, payload=pay[:88]) + rx_run()),
        'write_imm_v6': rx_frame(OP['WRITE_ONLY_IMM'], tgt=0x08, length=32, raw2=0x12345678,
                                 payload=pay[:32]) + rx_run(),
        'read_req': rx_frame(OP['READ_REQ'], length=600, off=128) + rx_run(),
        'send_only': rx_frame(OP['SEND_ONLY'], length=100, payload=pay[:100]) + rx_run(),
        'send_multi': (rx_frame(OP['SEND_FIRST'], payload=pay) +
                       rx_frame(OP['SEND_LAST'], length=10, payload=pay[:10]) + rx_run()),
        'atomics': (rx_frame(OP['CMP_SWAP'], off=8, a=5, b=0) +
                    rx_frame(OP['FETCH_ADD'], off=16, a=3) + rx_run()),
        # device 1 writes to device 0, the injected ACK/NAKs answer it first
        'ack': rec(5, traffic(1, 'WRITE', length=64)) + SENT + rx_frame(OP['ACK'], syn=0x1f) + rx_run(),
        'nak_seq': (rec(5, traffic(1, 'WRITE', length=600)) + SENT +
                    rx_frame(OP['ACK'], syn=0x60, kind=9) + rx_run()),
        'nak_rnr': rec(5, traffic(1, 'SEND', length=64)) + SENT + rx_frame(OP['ACK'], syn=0x21) + rx_run(),
        'read_resp': (rec(5, traffic(1, 'READ', length=64)) + SENT +
                      rx_frame(OP['READ_RESP_ONLY'], length=64, payload=pay[:64]) + rx_run()),
        'read_resp_multi': (rec(5, traffic(1, 'READ', length=300)) + SENT +
                            rx_frame(OP['READ_RESP_FIRST'], payload=pay) +
                            rx_frame(OP['READ_RESP_LAST'], length=44, payload=pay[:44]) +
                            rx_run()),
        'atomic_ack': (rec(5, traffic(1, 'FADD')) + SENT + rx_frame(OP['ATOMIC_ACK'], b=77) + rx_run()),
        'ud_send': rx_frame(OP['UD_SEND_ONLY'], tgt=2, length=100, payload=pay[:100]) + rx_run(),
        'gsi_send': rx_frame(OP['UD_SEND_ONLY'], tgt=3, length=40, payload=pay[:40]) + rx_run(),
        'err_rtr_reset_qps': (rx_frame(OP['SEND_ONLY'], tgt=4, length=8, payload=pay[:8]) +
                              rx_frame(OP['SEND_ONLY'], tgt=5, length=8, payload=pay[:8]) +
                              rx_frame(OP['SEND_ONLY'], tgt=6, length=8, payload=pay[:8]) +
                              rx_run()),
        'mutated_fixed': rx_frame(OP['WRITE_ONLY'], length=16, mut=0x0a,
                                  xors=[(60, 0x40), (70, 0x01)], payload=pay[:16]) + rx_run(),
        'replay': (rec(5, traffic(0, 'WRITE', length=300)) + rx_run(10, 50) +
                   rec(7, bytes([0, 0x09, 80, 0, 0x10])) + rx_run()),
        'raw_eth': (rec(0, bytes.fromhex('020000000002020000000001080600010800060400010200'
                                         '00000001') + bytes(20)) + rx_run()),
        'traffic_both': (rec(5, traffic(0, 'SEND', length=2000)) +
                         rec(5, traffic(1, 'READ', length=1000, s=1)) +
                         rec(6, bytes([1, 7])) + rx_run(24, 4000)),
    }
    seeds.update(pfc_seeds())
    seeds.update(refs_rx_seeds())
    return seeds


# payloads by reference (fz_refs_opts): the first byte's reference bit (rx
# 0x10, guest 0x80), then the reference byte, then (with a tap) its pattern
REFS_CHECKED, REFS_NONE, REFS_PTR = 0x00, 0x02, 0x03
REF_LAZY0, REF_LAZY1, REF_VOUCH, REF_TAP, REF_NO_LOG, REF_CORRUPT = 4, 8, 0x10, 0x20, 0x40, 0x80
# per frame, round 16 frames: fill, nothing, headers, fill + a flipped bit, ...
TAP_PATTERN = struct.pack('<I', 0x6c6c6c6c)


def refs_cfg(bit, refs, cfg=0):
    """A configuration prefix: cfg with the reference bit, the reference byte, a pattern."""
    return bytes([cfg | bit, refs]) + (TAP_PATTERN if refs & REF_TAP else b'')


def refs_rx_seeds():
    """Device 0's RC traffic reaches device 1 with its payload by reference
    (no frame log, which would fill every frame): checked mappings, lazy
    ICRCs, the vouched hand-over QEMU uses; a tap that fills and corrupts."""
    qemu_like = REFS_CHECKED | REF_LAZY0 | REF_LAZY1 | REF_VOUCH | REF_NO_LOG
    load = (rec(5, traffic(0, 'WRITE', length=2000)) + rec(5, traffic(0, 'SEND', length=600)) +
            rec(5, traffic(1, 'READ', length=1000, s=1)) + rec(6, bytes([1, 7])) +
            rx_run(24, 4000) + rec(6, bytes([0, 7])) + rx_run(24, 4000))
    return {
        'refs_lazy_vouch': (refs_cfg(0x10, qemu_like), load),
        'refs_tap': (refs_cfg(0x10, qemu_like | REF_TAP | REF_CORRUPT), load),
        'refs_logged': (refs_cfg(0x10, REFS_CHECKED | REF_LAZY0), load + rec(7, bytes([1, 0x08])) +
                        rx_run()),
    }


def pfc_frame(enable, times, opcode=0x0101, dst=b'\x01\x80\xc2\x00\x00\x01', length=60):
    """An 802.1Qbb PFC frame (opcode 0x0101: class-enable vector and eight pause
    times in quanta) or, with opcode 0x0001, an 802.3x PAUSE (its time first)."""
    body = dst + b'\x02\x00\x00\x00\x00\x09' + b'\x88\x08' + struct.pack('>H', opcode)
    if opcode == 0x0001:
        body += struct.pack('>H', times[0])
    else:
        body += struct.pack('>H8H', enable, *(list(times) + [0] * (8 - len(times))))
    return body.ljust(length, b'\0')[:max(length, 14)]


# configuration bytes of fuzz_rx (device 1: profile in bits 0-1, latency 0 with bit 2,
# bit 3 a receive buffer with PFC) and fuzz_guest (0x40: receive buffers on both)
RX_CX5_RXBUF = 0x01 | 0x08
GUEST_CX5_RXBUF = 0x01 | 0x04 | 0x40


def pfc_seeds():
    """fuzz_rx seeds for model/pfc.c: pause frames received while device 1 sends
    (it holds a priority, XON releases it), 802.3x, malformed ones, and a burst of
    WRITEs into device 1's receive buffer, which sends XOFF/XON and drops."""
    pay = bytes(range(256))
    burst = b''.join(rx_frame(OP['WRITE_ONLY'], length=256, payload=pay) for _ in range(48))
    return {
        'pfc_pause_resume': (RX_CX5_RXBUF,
                             rec(5, traffic(1, 'WRITE', length=3000)) +
                             rec(0, pfc_frame(0x00ff, [0xffff] * 8)) + rx_run(16, 200) +
                             rec(0, pfc_frame(0x00ff, [0] * 8)) + rx_run()),
        'pfc_8023x_and_bad': (RX_CX5_RXBUF,
                              rec(5, traffic(1, 'SEND', length=2000)) +
                              rec(0, pfc_frame(0, [0x1000], opcode=0x0001)) +
                              rec(0, pfc_frame(0x0008, [0x10], length=40)) +
                              rec(0, pfc_frame(0x0008, [0x10], opcode=0x0102)) +
                              rec(0, pfc_frame(0x0008, [0x10], dst=b'\x02\x00\x00\x00\x00\x02')) +
                              rx_run()),
        'rxbuf_burst': (RX_CX5_RXBUF, burst + rx_run(24, 4000)),
    }


# ---- fuzz_guest ------------------------------------------------------------------------
CMD = {'QUERY_DEVICE': 0x01, 'QUERY_PORT': 0x02, 'SET_GID': 0x03, 'ALLOC_UCTX': 0x05,
       'CREATE_PD': 0x07, 'CREATE_CQ': 0x09, 'CREATE_QP': 0x0b, 'MODIFY_QP': 0x0c,
       'QUERY_QP': 0x0d, 'DESTROY_QP': 0x0e, 'REG_MR': 0x0f, 'DEREG_MR': 0x10,
       'CREATE_AH': 0x12, 'CREATE_EQ': 0x14, 'QUERY_STATS': 0x16, 'ALLOC_MR': 0x1d,
       'ALLOC_MW': 0x1e, 'RESIZE_CQ': 0x1f, 'MODIFY_CQ': 0x20, 'CREATE_SRQ': 0x17,
       'REREG_MR': 0x21, 'ALLOC_XRCD': 0x22, 'DEALLOC_XRCD': 0x23}


def admin(d, op, s=(0,) * 8, v=(0, 0, 0, 0), x=0, patches=()):
    s = bytes(list(s) + [0] * (8 - len(s)))
    v = tuple(v) + (0,) * (4 - len(v))
    body = struct.pack('<BBB', d, CMD[op], len(patches)) + s + struct.pack('<IIIIQ', *v, x)
    for off, data in patches:
        body += struct.pack('<BB', off, len(data) - 1) + data
    return rec(0, body)


def g_run(d=0, exp=20, iters=4000):
    return rec(15, struct.pack('<BBH', d, exp, iters))


def fast_reg(d, what, qp_index=1, npages=2, length=100):
    """act_fast_reg: REG_MR (what 0) of the device's first FRMR over pages of
    its MRs, LOCAL_INV (1) or SEND_WITH_INV (2) of its key."""
    body = struct.pack('<BBBBBIQHB', d, qp_index, 0, (npages - 1) << 4, what, 0, 0, length, 0)
    return rec(9, body + bytes(npages if what == 0 else 0))


def modify(d, qp_index, state, dest_index=1, psn=0, x=0x0004_0303_0801_04):
    # s: qp, state, mask set (RC), av selector, port, access, path mtu, dest
    return admin(d, 'MODIFY_QP', s=(qp_index, state, 0, 0, 1, 0x0e, 0, dest_index),
                 v=(0, 0, 0, psn), x=x)


def xrc_seed():
    """An XRC connection: device 1 gets a domain, a CQ, an XRC SRQ of the domain and
    a TGT QP of it; device 0 an INI QP (both QP index 6, after the six base QPs);
    both go to RTS (the INI QP with the RC masks, responder attributes included,
    the TGT QP with its own), a receive WQE goes to the SRQ, the INI QP SENDs
    1000 bytes naming the peer's SRQ (its WQE's xrc_srqn); then device 0's MR 0
    gets a new translation (8 KiB of contiguous host pages) and access, then a
    PD (REREG_MR), and the domain is freed (BUSY: its SRQ and TGT QP exist)."""
    tgt, ini = 6, 6
    x = 0x0004_0303_0801_04
    return (admin(1, 'ALLOC_XRCD') + admin(1, 'CREATE_CQ', s=(0, 1, 6, 1)) +
            admin(1, 'CREATE_SRQ', s=(0, 0, 5, 9, 0, 1, 0x80, 2)) +
            admin(1, 'CREATE_QP', s=(0, 0, 0, 0, 0x60, 0, 0, 0)) +
            admin(0, 'CREATE_QP', s=(0, 0, 0, 0, 0x40, 6, 3, 0)) +
            modify(0, ini, 1) +
            admin(1, 'MODIFY_QP', s=(tgt, 1, 0x40, 0, 1, 0x0e, 0, ini)) +
            modify(0, ini, 2, dest_index=tgt, psn=0x1000) +
            admin(1, 'MODIFY_QP', s=(tgt, 2, 0x40, 0, 1, 0x0e, 0, ini), v=(0, 0, 0, 0x10), x=x) +
            modify(0, ini, 3, dest_index=tgt, psn=0x1000) +
            admin(1, 'MODIFY_QP', s=(tgt, 3, 0x40, 0, 1, 0x0e, 0, ini), v=(0, 0, 0, 0x10), x=x) +
            rec(3, struct.pack('<BBBI', 1, 0x20, 1, 0) + struct.pack('<BHHI', 0, 0, 4096, 0)) +
            rec(2, struct.pack('<BBBBBBIIIQQQ', 0, ini, 0x42, 0x01, 0x01, 0, 0, 0, 0, 0, 0, 0) +
                struct.pack('<H', 0) + struct.pack('<BHHI', 0, 0, 1000, 0)) + g_run() +
            admin(0, 'REREG_MR', s=(0, 0, 4, 1, 0x0f, 0, 0, 0), v=(0, 0, 0x100000, 0x1fff00)) +
            admin(0, 'REREG_MR', s=(0, 0, 1, 0, 0x0f, 0, 0, 0)) + g_run() +
            admin(1, 'DEALLOC_XRCD'))


def guest_corpus():
    # base QPs of each device, in the fuzzer's list: gsi 0, rc 1, ud 2, err 3, rtr 4, reset 5
    new_rc = 6
    setup = (admin(0, 'CREATE_PD') + admin(0, 'CREATE_CQ', s=(0, 1, 6, 1)) +
             admin(0, 'CREATE_QP', s=(0, 1, 0, 0, 0, 0x44, 3, 5)))
    seeds = {
        'admin_sequence': (setup + modify(0, new_rc, 1) + modify(0, new_rc, 2, dest_index=5) +
                           modify(0, new_rc, 3, psn=0x10) +
                           admin(0, 'REG_MR', s=(0, 0x0f, 0, 0, 1, 0, 0),
                                 v=(0, 0, 20000, 0x1234)) +
                           admin(0, 'QUERY_QP', s=(0, new_rc)) +
                           admin(0, 'DESTROY_QP', s=(0, new_rc)) + g_run()),
        'queries': (admin(1, 'QUERY_DEVICE', v=(0, 128)) + admin(1, 'QUERY_PORT', s=(0, 1), v=(0, 32)) +
                    admin(1, 'QUERY_STATS', v=(0, 4096)) + admin(1, 'ALLOC_UCTX') +
                    admin(1, 'CREATE_EQ', s=(0, 4, 3)) + admin(1, 'CREATE_AH', s=(0, 0))),
        'post_doorbell': (rec(2, struct.pack('<BBBBBBIIIQQQ', 0, 0x43, 0, 0x01, 0x01, 0, 0, 0, 0,
                                             0, 0, 0) + struct.pack('<H', 0) +
                              struct.pack('<BHHI', 0, 0, 64, 0)) +
                          rec(4, struct.pack('<BBBBBBII', 0, 0, 0, 1, 0, 0, 0, 0)) + g_run()),
        'traffic_service': (rec(13, traffic(0, 'WRITE', length=2000)) +
                            rec(13, traffic(1, 'READ', length=700)) + g_run() +
                            rec(10, bytes([0, 1, 7])) + rec(10, bytes([1, 0, 7]))),
        'reset_reinit': (rec(5, struct.pack('<BBBIQ', 0, 7, 0, 0, 0x5a5a)) +
                         rec(11, bytes([1, 0, 1])) + rec(13, traffic(1, 'SEND', length=64)) +
                         g_run()),
        'dma_deny_cq': (rec(6, struct.pack('<BBBIH', 1, 2, 0, 0, 4096)) +
                        rec(13, traffic(0, 'SEND', length=64)) + g_run() +
                        rec(6, bytes([1, 0, 1]))),
        'frames_in': (rec(7, bytes([1, 0]) + frame(OP['WRITE_ONLY'], length=32, payload=bytes(32))) +
                      rec(8, bytes([0, 2]) + bytes.fromhex('ffffffffffff02000000000108060001') +
                          bytes(44)) + g_run()),
        'fast_reg': (admin(0, 'ALLOC_MR', s=(0, 1, 8)) + fast_reg(0, 0) + g_run() +
                     rec(13, traffic(1, 'WRITE', length=200)) + g_run() + fast_reg(0, 1) +
                     g_run() + fast_reg(0, 0) + g_run() + fast_reg(1, 2, length=64) +
                     g_run()),
        'windows_cq_resize': (admin(0, 'ALLOC_MW', s=(0, 1, 1)) + fast_reg(0, 3, npages=1) + g_run() +
                              rec(13, traffic(1, 'WRITE', length=200)) + g_run() +
                              admin(0, 'RESIZE_CQ', s=(0, 0, 9)) +
                              admin(0, 'MODIFY_CQ', s=(0, 0, 0, 5), v=(0, 0, 4, 0)) +
                              rec(13, traffic(1, 'SEND', length=100)) + g_run()),
        # a CQ of 64-byte CQEs with timestamps (s[3] bit 1, ABI 1.7) under a new
        # RC QP (CQ index 2, after the two base CQs), the QP to RTS, the CQ resized
        'cq_timestamp': (admin(0, 'CREATE_PD') + admin(0, 'CREATE_CQ', s=(0, 1, 6, 3)) +
                         admin(0, 'CREATE_QP', s=(0, 1, 2, 2, 0, 0x44, 3, 5)) +
                         modify(0, new_rc, 1) + modify(0, new_rc, 2, dest_index=5) +
                         modify(0, new_rc, 3, psn=0x10) +
                         rec(13, traffic(1, 'SEND', length=100)) + g_run() +
                         admin(0, 'RESIZE_CQ', s=(0, 2, 9)) + g_run()),
        'xrc': xrc_seed(),
        'link_flap': (rec(13, traffic(0, 'SEND', length=3000)) + rec(12, bytes([1, 0])) +
                      g_run(exp=22) + rec(12, bytes([1, 1])) + g_run(exp=24)),
    }
    # payloads by reference (fz_refs_opts, reference bit 0x80): QEMU's
    # hand-over (checked mappings, lazy ICRCs, vouched), a trusted wire
    # (headers by description), a tap that fills, fills headers and
    # corrupts, no dma_map at all, and frames by reference still in flight
    # when a device resets and when the world is freed
    qemu_like = REFS_CHECKED | REF_LAZY0 | REF_LAZY1 | REF_VOUCH
    load = (rec(13, traffic(0, 'WRITE', length=2000)) + rec(13, traffic(1, 'READ', length=700)) +
            rec(13, traffic(0, 'SEND', length=300)) + g_run() +
            rec(10, bytes([0, 1, 7])) + rec(10, bytes([1, 1, 7])) + g_run())
    seeds['refs_lazy_vouch'] = (refs_cfg(0x80, qemu_like), load)
    seeds['refs_trusted'] = (refs_cfg(0x80, REFS_CHECKED, 0x10), load)
    seeds['refs_tap'] = (refs_cfg(0x80, qemu_like | REF_TAP | REF_CORRUPT), load)
    seeds['refs_tap_trusted'] = (refs_cfg(0x80, REFS_CHECKED | REF_TAP, 0x10), load)
    seeds['refs_none'] = (refs_cfg(0x80, REFS_NONE | REF_LAZY0 | REF_LAZY1), load)
    seeds['refs_reset_inflight'] = (refs_cfg(0x80, qemu_like, 0x01 | 0x04),
                                    rec(13, traffic(0, 'WRITE', length=8000)) +
                                    rec(13, traffic(1, 'READ', length=4000)) +
                                    g_run(exp=12, iters=50) + rec(11, bytes([1, 0, 1])) +
                                    rec(12, bytes([0, 0])) + g_run(exp=14, iters=50) +
                                    rec(12, bytes([0, 1])) + g_run())
    seeds['rxbuf_traffic'] = (GUEST_CX5_RXBUF,
                              rec(13, traffic(0, 'WRITE', length=60000)) +
                              rec(13, traffic(1, 'SEND', length=30000)) + g_run(exp=24))
    return seeds


def write(target, seeds):
    """seeds: {name: records, or (configuration byte or bytes, records)}."""
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if not f.startswith('regress-'):    # crash inputs kept as regression seeds stay
            os.unlink(os.path.join(d, f))
    for name, data in seeds.items():
        cfg, data = data if isinstance(data, tuple) else (0, data)
        if isinstance(cfg, int):
            cfg = bytes([cfg])
        with open(os.path.join(d, name), 'wb') as fh:
            fh.write(cfg + data)   # first byte(s): the input's configuration
    return len(seeds)


if __name__ == '__main__':
    print('rx', write('rx', rx_corpus()), 'seeds')
    print('guest', write('guest', guest_corpus()), 'seeds')
