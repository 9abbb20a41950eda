/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_rx: frames received from the wire, against a live world.
 *
 * Every input gets a fresh world (fz_world_new: two cabled devices, RC QPs
 * in RTS to each other, UD and GSI QPs, a QP in ERR, one in RTR, one in
 * RESET, MRs with remote access, receive WQEs, Ethernet rings); device 1
 * is the target.  The input's first byte picks device 1's timing profile
 * (bits 0-1), the wire latency (bit 2) and a receive buffer with PFC on
 * device 1 (bit 3, fz_cfg_rxbuf) and (bit 4) that the reference byte follows
 * (fz_refs_opts: checked dma_map/dma_unmap or none, lazy ICRCs, vouched
 * hand-over, a tap, no frame log: device 0's traffic then reaches device 1
 * with its payload by reference), then records (fuzz_common.h) follow, at most
 * FZ_MAX_RECORDS:
 *
 *   kind & 7 = 0      raw frame: the body, injected into device 1
 *   kind & 7 = 1..3   a frame built by fz_frame(): a valid RoCEv2 frame for
 *                     one of device 1's QPs (any opcode, PSN relative to
 *                     the expected one, keys and addresses of its MRs),
 *                     then field overrides and XOR masks; injected
 *   kind & 7 = 4      run: up to 2^(b0 % 28) ns, 1 + u16 % 4096 iterations
 *   kind & 7 = 5      traffic: device (b0 & 1) posts a well-formed work
 *                     request (fz_traffic), so that injected responses and
 *                     ACKs meet outstanding requests, and injected requests
 *                     race with real ones
 *   kind & 7 = 6      service: receive WQEs, CQ/EQ polling and arming
 *   kind & 7 = 7      replay: a frame the wire carried (frame log), XOR
 *                     mutated, checksums and ICRC optionally fixed, injected
 *   kind & 8          settle the current instant afterwards
 *
 * After every record the device invariants are checked (fz_check: QP
 * lists, self-check failures, work left unscheduled) and every run is
 * bounded and watched for hangs (fz_run).
 *
 * The ICRC is checked, as on a real wire (no trusted wire).  fz_frame
 * builds frames with a correct ICRC and, for mutated bytes, fixes the IPv4
 * header checksum and the ICRC again when the record asks (mut bit 3).
 * That reaches deepest: a frame whose ICRC is wrong stops at the check (one
 * branch, kept reachable through the records that do not fix it), while a
 * trusted wire would skip the check altogether and leave it and the drop
 * path unfuzzed; mutating first and fixing afterwards lets every mutated
 * header field reach the transport.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"

#define RX_LOG_FRAMES	128

static void replay(struct fz *f, struct fz_in *in, uint8_t *buf, size_t cap)
{
	uint32_t count = hx_framelog_count(f->w), n;
	uint8_t sel = fz_u8(in), mut = fz_u8(in);
	int len;

	if (!count)
		return;
	len = hx_framelog_get(f->w, sel % count, NULL, buf, (uint32_t)cap);
	if (len <= 0)
		return;
	n = (uint32_t)len < cap ? (uint32_t)len : (uint32_t)cap;
	for (int i = 0; i < (mut & 7); i++) {
		uint16_t pos = fz_u16(in);
		uint8_t mask = fz_u8(in);

		buf[pos % n] ^= mask ? mask : 0xff;
	}
	if (mut & 8)
		fz_fix_frame(buf, n);
	hx_rx_inject(f->w, 1, buf, n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t frame[QRNIC_ETH_MAX_FRAME + 64];
	struct fz_in in = { data, size, 0 }, body;
	struct fz_opts o;
	struct fz f;
	uint8_t cfg = fz_u8(&in), kind;
	size_t n;

	memset(&o, 0, sizeof(o));
	o.profile[1] = (cfg & 3) == 3 ? 0 : cfg & 3;
	o.latency_ns = (cfg & 4) ? 0 : 1000;
	o.rx_buffer[1] = cfg & 8;
	if (cfg & 0x10)		/* payload references: a byte (and a tap pattern) follow */
		fz_refs_opts(&o, &in);
	if (fz_world_new(&f, "fuzz_rx", &o)) {
		fprintf(stderr, "fuzz_rx: world setup failed: %s\n", f.w ? hx_world_error(f.w) : "");
		abort();
	}
	if (!o.no_framelog)	/* a frame log fills every frame it logs */
		hx_framelog_enable(f.w, RX_LOG_FRAMES);
	fz_check(&f);
	for (int i = 0; i < FZ_MAX_RECORDS && !f.spent && fz_record(&in, &kind, &body); i++) {
		f.action = i;
		if (hx_framelog_count(f.w) >= RX_LOG_FRAMES)
			hx_framelog_clear(f.w);
		switch (kind & 7) {
		case 0:
			n = body.n < sizeof(frame) ? body.n : sizeof(frame);
			hx_rx_inject(f.w, 1, body.p, (uint32_t)n);
			break;
		case 1:
		case 2:
		case 3:
			n = fz_frame(&f, 1, &body, frame, sizeof(frame));
			hx_rx_inject(f.w, 1, frame, (uint32_t)n);
			break;
		case 4: {
			uint8_t e = fz_u8(&body);

			fz_run(&f, 1ull << (e % 28), 1 + fz_u16(&body) % 4096u);
			break;
		}
		case 5:
			fz_traffic(&f, fz_u8(&body) & 1, &body);
			break;
		case 6:
			fz_service(&f, fz_u8(&body) & 1, &body);
			break;
		default:
			replay(&f, &body, frame, sizeof(frame));
			break;
		}
		if (kind & 8)
			fz_run(&f, 0, 64);
		fz_check(&f);
	}
	fz_run(&f, FZ_FINAL_NS, FZ_FINAL_ITERS);
	fz_check(&f);
	fz_world_free(&f);
	return 0;
}
