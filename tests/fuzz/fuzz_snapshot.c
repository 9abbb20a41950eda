/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fuzz_snapshot: device snapshot streams (migration, savevm), the input of
 * qrnic_dev_load (model/snapshot.c, docs/qemu.md section 9).
 *
 * The input is a stream.  A world of two cabled devices, configured as the
 * seeds were (tests/fuzz/make_snapshot_corpus.py: SNAP_CFG, device 0 with
 * the functional profile, device 1 with teach), loads it into the device
 * whose profile it names (a stream names its profile in CONF; any other is
 * refused there).  A refused stream must leave the device reset; a loaded
 * one must pass the device's self-check, then run bounded (the world's run
 * loop: timers, frames between the devices, effects), keep passing it, and
 * save again without error.  The world is made once and reused: a load
 * replaces the whole device state, so one input cannot leak into the next
 * beyond the device it replaces.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "qrnic_model.h"

#define SNAP_CFG	"max_qp=64,max_cq=64,max_mr=256,max_mtt=4096,max_pd=16,max_ah=16," \
			"max_srq=16,max_eq=8,max_uctx=8,max_xrcd=8,max_cqe=32768"

static hx_world *world(void)
{
	static hx_world *w;

	if (w)
		return w;
	w = hx_world_new(64ull << 20, 1);
	if (!w || hx_dev_add(w, SNAP_CFG) != 0 || hx_dev_add(w, SNAP_CFG) != 1 ||
	    hx_set_timing(w, 1, "teach", NULL) != 0 || hx_cable(w, 0, 1) != 0) {
		fprintf(stderr, "fuzz_snapshot: cannot build the world: %s\n",
			w ? hx_world_error(w) : "out of memory");
		abort();
	}
	hx_dev_selfcheck(w, 0, 1);
	hx_dev_selfcheck(w, 1, 1);
	return w;
}

static void check(hx_world *w, int d, const char *when)
{
	char why[256];

	if (hx_dev_check(w, d, why, sizeof(why)) != 0) {
		fprintf(stderr, "fuzz_snapshot: device %d %s: %s\n", d, when, why);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	hx_world *w = world();
	int d;

	/* device 0 first; a stream of the other profile is refused in CONF */
	for (d = 0; d < 2; d++)
		if (hx_dev_load(w, d, data, size) == 0)
			break;
	if (d == 2) {
		/* refused: both devices are reset (disabled) */
		for (int i = 0; i < 2; i++)
			if (hx_reg_read(w, i, 0x008 /* QRNIC_REG_CTRL */, 4) != 0) {
				fprintf(stderr, "fuzz_snapshot: refused, but device %d is enabled\n", i);
				abort();
			}
		return 0;
	}
	check(w, d, "after the load");
	hx_run(w, 2000000, 20000);	/* bounded: 2 ms of virtual time, 20000 steps */
	check(w, d, "after running");
	if (hx_dev_save(w, d, NULL, 0) < 0) {
		fprintf(stderr, "fuzz_snapshot: cannot save what was loaded\n");
		abort();
	}
	/* the next input starts from a reset device */
	hx_dev_reset(w, 0);
	hx_dev_reset(w, 1);
	hx_run(w, 1000000, 1000);
	return 0;
}
