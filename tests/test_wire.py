# SPDX-License-Identifier: GPL-2.0-or-later
"""RoCEv2 wire format (model/wire.c): C self test under ASan/UBSan, and an
independent check of the frames it builds with tshark plus a Python ICRC.

tshark (4.0) decodes RoCEv2 but does not verify the ICRC: it only shows the
4 trailing bytes as infiniband.invariant.crc.  Validity is therefore decided
here by an independent Python implementation of the IBTA Annex A17 ICRC
(zlib.crc32 over the masked pseudo packet), which is itself anchored to an
ICRC computed by ConnectX-4 Lx hardware (the captured CNP below).  The tshark
test asserts, frame by frame, that tshark finds the ICRC where we put it and
that it equals the reference value for every good frame and differs for the
deliberately corrupted last frame.
"""
import ipaddress
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CC = os.environ.get("CC", "cc")
# opcodes qrnic implements: RC (23 with the two SEND with invalidate), UC 12, UD 2,
# XRC 23 (the RC ones, transport 101), CNP 1
N_OPCODES = 61

SRCS = ["model/wire.c", "model/crc.c", "model/pcap.c", "tests/c/wire_selftest.c"]
INCS = ["-Imodel", "-Imodel/abi"]
SAN_ENV = dict(os.environ,
               ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")

# RoCEv2 CNP captured on a ConnectX-4 Lx; the NIC computed the ICRC
# (wire bytes 82 fd 00 2a).  Public test vector of scapy's RoCE layer.
CNP_CONNECTX4 = bytes.fromhex(
    "e41d2dab2bc27cfe90643b32080045c2"
    "003c718c4000401191610a0011010a00"
    "1201000012b7002800008100ffff4000"
    "01180000000000000000000000000000"
    "00000000000082fd002a")


def ref_icrc(frame: bytes) -> bytes:
    """ICRC bytes as they must appear on the wire, computed independently."""
    ethertype = frame[12:14]
    if ethertype == b"\x08\x00":
        iphl = 20
        iplen = struct.unpack(">H", frame[16:18])[0]
        ip = bytearray(frame[14:14 + iplen])
        ip[1] = 0xFF                # TOS
        ip[8] = 0xFF                # TTL
        ip[10:12] = b"\xff\xff"     # header checksum
    elif ethertype == b"\x86\xdd":
        iphl = 40
        iplen = 40 + struct.unpack(">H", frame[18:20])[0]
        ip = bytearray(frame[14:14 + iplen])
        ip[0] |= 0x0F               # traffic class
        ip[1:4] = b"\xff\xff\xff"   # traffic class, flow label
        ip[7] = 0xFF                # hop limit
    else:
        raise ValueError("not IP")
    ip[iphl + 6:iphl + 8] = b"\xff\xff"     # UDP checksum
    ip[iphl + 8 + 4] = 0xFF                 # BTH FECN/BECN/resv6
    crc = zlib.crc32(b"\xff" * 8 + bytes(ip[:-4]))
    return struct.pack("<I", crc)          # least significant byte first


def wire_icrc(frame: bytes) -> bytes:
    if frame[12:14] == b"\x08\x00":
        end = 14 + struct.unpack(">H", frame[16:18])[0]
    else:
        end = 14 + 40 + struct.unpack(">H", frame[18:20])[0]
    return frame[end - 4:end]


def read_pcap(path):
    data = Path(path).read_bytes()
    magic = struct.unpack("<I", data[:4])[0]
    assert magic == 0xA1B2C3D4
    assert struct.unpack("<I", data[20:24])[0] == 1     # LINKTYPE_ETHERNET
    off, frames = 24, []
    while off < len(data):
        _, _, incl, orig = struct.unpack("<IIII", data[off:off + 16])
        assert incl == orig
        frames.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


def compile_selftest(outdir, extra):
    exe = Path(outdir) / "wire_selftest"
    cmd = [CC, "-std=c11", "-Wall", "-Wextra", *extra, *INCS, *SRCS, "-o", str(exe)]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stdout}{r.stderr}"
    return exe


@pytest.fixture(scope="module")
def selftest(tmp_path_factory):
    return compile_selftest(tmp_path_factory.mktemp("wire_asan"),
                            ["-O1", "-g", "-fno-omit-frame-pointer",
                             "-fsanitize=address,undefined", "-fno-sanitize-recover=all"])


@pytest.fixture(scope="module")
def capture(selftest, tmp_path_factory):
    d = tmp_path_factory.mktemp("wire_pcap")
    pcap = d / "wire.pcap"
    r = subprocess.run([str(selftest), "pcap", str(pcap)], capture_output=True, text=True, env=SAN_ENV)
    assert r.returncode == 0, r.stderr
    meta = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    frames = read_pcap(pcap)
    assert len(frames) == len(meta)
    return pcap, meta, frames


def run_roundtrip(exe, **env):
    r = subprocess.run([str(exe), "roundtrip"], capture_output=True, text=True, env=dict(SAN_ENV, **env),
                       timeout=600)
    out = r.stdout + r.stderr
    m = re.search(r"^(\d+) passed, (\d+) failed$", r.stdout, re.M)
    assert r.returncode == 0 and m and m.group(2) == "0", out[-4000:]
    assert int(m.group(1)) > 20000, out[-2000:]


def test_roundtrip_sanitized(selftest):
    run_roundtrip(selftest)


def test_roundtrip_o2(tmp_path):
    # the exact build line the brief documents, optimised, no sanitizers
    run_roundtrip(compile_selftest(tmp_path, ["-O2"]))


@pytest.mark.parametrize("knob", ["QRNIC_NO_VPCLMUL", "QRNIC_NO_CLMUL"])
def test_crc_paths_agree(selftest, capture, tmp_path, knob):
    # the 128-bit PCLMUL path (even on a CPU with 512-bit VPCLMULQDQ) and the
    # table-driven one: the roundtrip passes and every captured frame, ICRC
    # included, is byte for byte the same
    run_roundtrip(selftest, **{knob: "1"})
    pcap = tmp_path / "wire.pcap"
    r = subprocess.run([str(selftest), "pcap", str(pcap)], capture_output=True, text=True,
                       env=dict(SAN_ENV, **{knob: "1"}))
    assert r.returncode == 0, r.stderr
    assert read_pcap(pcap) == capture[2]


@pytest.mark.parametrize("src", ["model/wire.c", "model/crc.c"])
def test_wire_c_warning_free(tmp_path, src):
    cmd = [CC, "-std=c11", "-O2", "-Wall", "-Wextra", "-Wshadow", "-Wstrict-prototypes", "-Wvla",
           "-Wpedantic", "-Wcast-align", "-Werror", "-Imodel", "-Imodel/abi", "-c", src,
           "-o", str(tmp_path / "out.o")]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_reference_icrc_matches_hardware():
    # anchors the Python reference (and its byte order) to a NIC-computed ICRC
    assert ref_icrc(CNP_CONNECTX4) == bytes.fromhex("82fd002a") == wire_icrc(CNP_CONNECTX4)


def test_pcap_icrc_independent(capture):
    _, meta, frames = capture
    assert len(frames) == 2 * N_OPCODES + 1
    for m, f in zip(meta, frames):
        assert len(f) == m["len"]
        assert wire_icrc(f).hex() == m["icrc_wire"]
        if m["icrc_ok"]:
            assert ref_icrc(f) == wire_icrc(f), m
            assert struct.pack("<I", m["icrc_value"]) == wire_icrc(f)
        else:
            assert ref_icrc(f) != wire_icrc(f), m
            # qrnic_icrc() still reports the correct value for the frame
            assert struct.pack("<I", m["icrc_value"]) == ref_icrc(f)
    assert not meta[-1]["icrc_ok"] and all(m["icrc_ok"] for m in meta[:-1])


TSHARK_FIELDS = [
    "frame.number", "frame.protocols", "eth.type",
    "ip.src", "ip.dst", "ip.dsfield", "ip.ttl", "ip.flags.df", "ip.checksum.status",
    "ipv6.src", "ipv6.dst", "ipv6.tclass", "ipv6.flow", "ipv6.hlim",
    "udp.srcport", "udp.dstport", "udp.length", "udp.checksum.status",
    "infiniband.bth.opcode", "infiniband.bth.se", "infiniband.bth.m", "infiniband.bth.padcnt",
    "infiniband.bth.tver", "infiniband.bth.p_key", "infiniband.bth.destqp", "infiniband.bth.a",
    "infiniband.bth.psn",
    "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen",
    "infiniband.aeth.syndrome", "infiniband.aeth.msn",
    "infiniband.atomiceth.swapdt", "infiniband.atomiceth.cmpdt",
    "infiniband.atomicacketh.origremdt",
    "infiniband.deth.q_key", "infiniband.deth.srcqp", "infiniband.vendor",
    "infiniband.immdt", "data.data",
    "infiniband.invariant.crc", "infiniband.vendor",
]


def tshark_rows(pcap):
    tshark = shutil.which("tshark")
    if not tshark:
        pytest.skip("tshark not installed")
    cmd = [tshark, "-n", "-r", str(pcap),
           "-d", "udp.port==4791,infiniband",
           "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
           "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f", "-E", "quote=n"]
    for f in TSHARK_FIELDS:
        cmd += ["-e", f]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = []
    for line in r.stdout.splitlines():
        vals = line.split("\t")
        assert len(vals) == len(TSHARK_FIELDS), line
        rows.append(dict(zip(TSHARK_FIELDS, vals)))
    return rows


def num(s):
    assert s != "", "field missing"
    return int(s, 0)


def test_tshark_decodes(capture):
    pcap, meta, frames = capture
    rows = tshark_rows(pcap)
    assert len(rows) == len(meta)
    for m, row, f in zip(meta, rows, frames):
        ctx = f"frame {m['index']} {m['name']} ipv6={m['ipv6']}"
        hdrs = set(m["hdrs"])
        assert num(row["frame.number"]) == m["index"], ctx
        assert row["frame.protocols"].split(":")[:4] == \
            ["eth", "ethertype", "ipv6" if m["ipv6"] else "ip", "udp"], ctx
        assert "infiniband" in row["frame.protocols"].split(":"), ctx
        # L3 / L4
        if m["ipv6"]:
            assert num(row["eth.type"]) == 0x86DD, ctx
            assert ipaddress.ip_address(row["ipv6.src"]) == ipaddress.ip_address(m["sip"]), ctx
            assert ipaddress.ip_address(row["ipv6.dst"]) == ipaddress.ip_address(m["dip"]), ctx
            assert num(row["ipv6.tclass"]) == m["tclass"], ctx
            assert num(row["ipv6.flow"]) == m["flow_label"], ctx
            assert num(row["ipv6.hlim"]) == m["hop_limit"], ctx
            assert num(row["udp.checksum.status"]) == 1, ctx + ": UDP checksum not Good"
        else:
            assert num(row["eth.type"]) == 0x0800, ctx
            assert row["ip.src"] == m["sip"] and row["ip.dst"] == m["dip"], ctx
            assert num(row["ip.dsfield"]) == m["tclass"], ctx
            assert num(row["ip.ttl"]) == m["hop_limit"], ctx
            assert num(row["ip.flags.df"]) == 1, ctx
            assert num(row["ip.checksum.status"]) == 1, ctx + ": IPv4 checksum not Good"
            assert num(row["udp.checksum.status"]) == 3, ctx + ": IPv4 UDP checksum should be 0"
        assert num(row["udp.srcport"]) == m["sport"], ctx
        assert num(row["udp.dstport"]) == 4791, ctx
        assert num(row["udp.length"]) == m["len"] - 14 - (40 if m["ipv6"] else 20), ctx
        # BTH
        assert num(row["infiniband.bth.opcode"]) == m["opcode"], ctx
        assert num(row["infiniband.bth.destqp"]) == m["dqpn"], ctx
        assert num(row["infiniband.bth.psn"]) == m["psn"], ctx
        assert num(row["infiniband.bth.padcnt"]) == m["padcnt"], ctx
        assert num(row["infiniband.bth.tver"]) == 0, ctx
        assert num(row["infiniband.bth.p_key"]) == m["pkey"], ctx
        assert num(row["infiniband.bth.se"]) == m["se"], ctx
        assert num(row["infiniband.bth.m"]) == m["migreq"], ctx
        assert num(row["infiniband.bth.a"]) == m["ackreq"], ctx
        if m["opcode"] >= 0xa0:
            # XRC: tshark 4.0 names the opcode but leaves what follows the BTH
            # undecoded ("Unknown/Vendor Specific Data", first occurrence: the
            # first 4 bytes after the BTH, a request's XRCETH); those
            # are our bytes
            bth_end = 14 + (40 if m["ipv6"] else 20) + 8 + 12
            vend = bytes.fromhex(row["infiniband.vendor"].replace(":", ""))
            assert vend and bytes(f[bth_end:]).startswith(vend), ctx
            if "XRCETH" in hdrs:
                assert vend[:4] == b"\0" + m["xrc_srqn"].to_bytes(3, "big"), ctx
            else:
                assert "xrc_srqn" not in m, ctx
            assert bytes.fromhex(m["icrc_wire"]) == wire_icrc(f), ctx
            if m["icrc_ok"]:
                assert wire_icrc(f) == ref_icrc(f), ctx + ": ICRC invalid"
            continue
        # extension headers (tshark shows the AtomicETH VA / R_Key as reth.*)
        if "RETH" in hdrs:
            assert num(row["infiniband.reth.va"]) == m["reth_va"], ctx
            assert num(row["infiniband.reth.r_key"]) == m["reth_rkey"], ctx
            assert num(row["infiniband.reth.dmalen"]) == m["reth_len"], ctx
        elif "ATOMICETH" in hdrs:
            assert num(row["infiniband.reth.va"]) == m["atomic_va"], ctx
            assert num(row["infiniband.reth.r_key"]) == m["atomic_rkey"], ctx
            assert num(row["infiniband.atomiceth.swapdt"]) == m["atomic_swap_add"], ctx
            assert num(row["infiniband.atomiceth.cmpdt"]) == m["atomic_cmp"], ctx
        else:
            assert row["infiniband.reth.va"] == "", ctx
        if "AETH" in hdrs:
            assert num(row["infiniband.aeth.syndrome"]) == m["aeth_syndrome"], ctx
            assert num(row["infiniband.aeth.msn"]) == m["aeth_msn"], ctx
        else:
            assert row["infiniband.aeth.syndrome"] == "", ctx
        if "ATOMICACKETH" in hdrs:
            assert num(row["infiniband.atomicacketh.origremdt"]) == m["atomic_ack_orig"], ctx
        if "DETH" in hdrs:
            assert num(row["infiniband.deth.q_key"]) == m["deth_qkey"], ctx
            assert num(row["infiniband.deth.srcqp"]) == m["deth_sqpn"], ctx
        if "IMMDT" in hdrs:
            assert row["infiniband.immdt"].replace(":", "").lower() == m["imm"], ctx
        if "PAYLOAD" in hdrs and m["paylen"]:
            data = row["data.data"].replace(":", "").lower()
            assert data == m["payload"] + "00" * m["padcnt"], ctx
        else:
            assert row["data.data"] == "", ctx
        if m["opcode"] == 0x81:
            # CNP: Wireshark 4.0 has no CNP dissector: it shows opcode 129 as
            # unknown and (part of) what follows the BTH as vendor data
            vendor = bytes.fromhex(row["infiniband.vendor"].replace(":", ""))
            after_bth = f[14 + (40 if m["ipv6"] else 20) + 8 + 12:]
            assert after_bth[:16] == bytes(16) and after_bth.startswith(vendor), ctx
            assert ref_icrc(f) == wire_icrc(f), ctx + ": ICRC invalid"
            continue
        # ICRC: tshark finds it in the last 4 bytes and shows them big endian
        shown = num(row["infiniband.invariant.crc"]).to_bytes(4, "big")
        assert shown == bytes.fromhex(m["icrc_wire"]) == wire_icrc(f), ctx
        if m["icrc_ok"]:
            assert shown == ref_icrc(f), ctx + ": ICRC invalid"
        else:
            assert shown != ref_icrc(f), ctx + ": corrupted ICRC looks valid"


def test_tshark_reads_ipv6(capture):
    pcap, meta, _ = capture
    rows = tshark_rows(pcap)
    v6 = [r for r, m in zip(rows, meta) if m["ipv6"]]
    assert len(v6) == N_OPCODES
    for r in v6:
        assert r["frame.protocols"].startswith("eth:ethertype:ipv6:udp:infiniband"), r
        assert r["ipv6.src"] and num(r["infiniband.bth.destqp"]) > 0
    opcodes = sorted(num(r["infiniband.bth.opcode"]) for r in v6)
    assert opcodes == sorted(m["opcode"] for m in meta if m["ipv6"])


ICRC_PROBE = r"""
import ctypes, random, struct, sys, zlib
lib = ctypes.CDLL(sys.argv[1])
lib.qrnic_icrc.restype = ctypes.c_uint32
lib.qrnic_icrc.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
rnd = random.Random(7)
out = []
for v6 in (False, True):
    for body in list(range(0, 260, 4)) + [508, 1024, 1040, 2048, 4096, 4112, 4116, 4124, 8192, 8960]:
        pay = bytes(rnd.getrandbits(8) for _ in range(body))
        bth = bytes(rnd.getrandbits(8) for _ in range(12))
        udp_len = 8 + 12 + body + 4
        udp = struct.pack(">HHHH", rnd.getrandbits(16), 4791, udp_len, 0)
        if v6:
            ip = bytes([0x60 | rnd.getrandbits(4)]) + bytes(rnd.getrandbits(8) for _ in range(3))
            ip += struct.pack(">HBB", udp_len, 17, 64) + bytes(rnd.getrandbits(8) for _ in range(32))
            eth = b"\x02" * 12 + b"\x86\xdd"
        else:
            ip = struct.pack(">BBHHHBBH", 0x45, 0, 20 + udp_len, 0, 0x4000, 64, 17, 0)
            ip += bytes(rnd.getrandbits(8) for _ in range(8))
            eth = b"\x02" * 12 + b"\x08\x00"
        f = eth + ip + udp + bth + pay + b"\0\0\0\0"
        out.append("%s %08x" % (f.hex(), lib.qrnic_icrc(f, len(f))))
print("\n".join(out))
"""


@pytest.mark.parametrize("knob", [None, "QRNIC_NO_VPCLMUL", "QRNIC_NO_CLMUL"])
def test_icrc_all_sizes_independent(tmp_path, knob):
    # every CRC path (512-bit, 128-bit, table) against the Python reference,
    # IPv4 and IPv6, from header-only frames to jumbo payloads
    so = tmp_path / "libwire.so"
    cmd = [CC, "-std=c11", "-O2", "-shared", "-fPIC", *INCS, "model/wire.c", "model/crc.c", "-o",
           str(so)]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    env = dict(os.environ, **({knob: "1"} if knob else {}))
    r = subprocess.run([sys.executable, "-c", ICRC_PROBE, str(so)], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split()
    assert len(lines) == 2 * 2 * 75
    for hexf, val in zip(lines[::2], lines[1::2]):
        f = bytes.fromhex(hexf)
        assert struct.pack("<I", int(val, 16)) == ref_icrc(f), (len(f), knob)
