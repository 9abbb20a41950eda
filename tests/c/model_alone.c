/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device model without the firmware: this program is linked with the
 * model's objects only (every one of them: meson links libqrnic_model.a
 * whole into model_alone), so it links only if no model object needs a
 * firmware symbol.  It checks what a device does without an admin engine
 * (qrnic_dev_new(..., NULL, NULL)): the admin queue enables, its first
 * doorbell puts it into error with a clear log line, nothing is written to
 * the completion ring, no interrupt, no crash, and a reset brings it back.
 * And that an engine handed over
 * through struct qrnic_admin_ops is called as documented (run with the
 * budget after a doorbell; reset at creation and at every device reset).
 *
 * Public API only (qrnic_model.h, ABI headers).  Prints "N checks, M
 * failures"; exit status 0 when M is 0.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qrnic_model.h"

static int failures, checks;

#define CHECK(cond)								\
	do {									\
		checks++;							\
		if (!(cond)) {							\
			failures++;						\
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		}								\
	} while (0)

/* ---- a host: 64 KiB of memory at bus address MEM_BASE ------------------------ */
#define MEM_BASE	0x100000ull
#define MEM_SIZE	0x10000ull

static struct {
	uint8_t mem[MEM_SIZE];
	uint64_t now;
	unsigned irqs, schedules;
	char log[4][256];
	unsigned nlog;
} H;

static int h_dma_read(void *o, uint64_t addr, void *buf, size_t len)
{
	if (addr < MEM_BASE || addr - MEM_BASE > MEM_SIZE || len > MEM_SIZE - (addr - MEM_BASE))
		return -1;
	memcpy(buf, H.mem + (addr - MEM_BASE), len);
	return 0;
}

static int h_dma_write(void *o, uint64_t addr, const void *buf, size_t len)
{
	if (addr < MEM_BASE || addr - MEM_BASE > MEM_SIZE || len > MEM_SIZE - (addr - MEM_BASE))
		return -1;
	memcpy(H.mem + (addr - MEM_BASE), buf, len);
	return 0;
}

static void h_irq(void *o, unsigned vector) { H.irqs++; }
static void h_tx(void *o, const uint8_t *frame, size_t len) { }
static uint64_t h_now(void *o) { return H.now; }
static void h_timer(void *o, uint64_t deadline) { }
static void h_schedule(void *o) { H.schedules++; }

static void h_log(void *o, enum qrnic_log_level level, const char *msg)
{
	if (H.nlog < 4)
		snprintf(H.log[H.nlog], sizeof(H.log[0]), "%s", msg);
	H.nlog++;
}

static const struct qrnic_host_ops ops = {
	.dma_read = h_dma_read, .dma_write = h_dma_write, .irq = h_irq, .tx_frame = h_tx,
	.now_ns = h_now, .timer_arm = h_timer, .schedule = h_schedule, .log = h_log,
};

#define AQ_SQ	(MEM_BASE + 0x1000)
#define AQ_CQ	(MEM_BASE + 0x2000)
#define AQ_LOG	3

static uint32_t rd(struct qrnic_dev *d, uint64_t off)
{
	return (uint32_t)qrnic_dev_reg_read(d, off, 4);
}

static void wr(struct qrnic_dev *d, uint64_t off, uint32_t v)
{
	qrnic_dev_reg_write(d, off, v, 4);
}

/* Enable the device and its admin queue (depth 8). */
static void bring_up(struct qrnic_dev *d)
{
	wr(d, QRNIC_REG_CTRL, QRNIC_CTRL_ENABLE);
	wr(d, QRNIC_REG_AQ_SQ_BASE_LO, (uint32_t)AQ_SQ);
	wr(d, QRNIC_REG_AQ_SQ_BASE_HI, (uint32_t)(AQ_SQ >> 32));
	wr(d, QRNIC_REG_AQ_CQ_BASE_LO, (uint32_t)AQ_CQ);
	wr(d, QRNIC_REG_AQ_CQ_BASE_HI, (uint32_t)(AQ_CQ >> 32));
	wr(d, QRNIC_REG_AQ_CTRL, QRNIC_AQ_CTRL_ENABLE | AQ_LOG);
}

/* Put a QUERY_DEVICE command into admin SQ slot i and ring the doorbell. */
static void post_query(struct qrnic_dev *d, uint32_t i)
{
	struct qrnic_aq_cmd cmd;

	memset(&cmd, 0, sizeof(cmd));
	cmd.hdr.opcode = QRNIC_CMD_QUERY_DEVICE;
	cmd.hdr.cmd_id = (uint16_t)(i + 1);
	memcpy(H.mem + (AQ_SQ - MEM_BASE) + (uint64_t)(i & 7) * QRNIC_AQ_SQE_SIZE, &cmd, sizeof(cmd));
	wr(d, QRNIC_REG_AQ_SQ_DB, i + 1);
}

static void run_idle(struct qrnic_dev *d)
{
	for (int n = 0; n < 100 && qrnic_dev_busy(d); n++)
		qrnic_dev_run(d);
}

static bool cq_untouched(void)
{
	for (uint64_t i = 0; i < (1u << AQ_LOG) * QRNIC_AQ_CQE_SIZE; i++)
		if (H.mem[AQ_CQ - MEM_BASE + i])
			return false;
	return true;
}

static struct qrnic_dev *dev_new(const struct qrnic_admin_ops *admin, void *admin_opaque)
{
	struct qrnic_config cfg;

	qrnic_config_defaults(&cfg);
	cfg.max_qp = 64;
	cfg.max_cq = 64;
	cfg.max_mr = 64;
	cfg.max_mtt = 1024;
	return qrnic_dev_new(&cfg, &ops, &H, admin, admin_opaque);
}

/* ---- no admin engine ----------------------------------------------------------- */
static void test_no_engine(void)
{
	struct qrnic_dev *d = dev_new(NULL, NULL);
	uint64_t ignored;

	CHECK(d != NULL);
	if (!d)
		return;
	bring_up(d);
	CHECK(rd(d, QRNIC_REG_AQ_STATUS) == QRNIC_AQ_STATUS_ENABLED);
	H.nlog = 0;
	post_query(d, 0);
	CHECK(qrnic_dev_busy(d));
	run_idle(d);
	CHECK(!qrnic_dev_busy(d));
	CHECK(rd(d, QRNIC_REG_AQ_STATUS) & QRNIC_AQ_STATUS_ERROR);
	CHECK(rd(d, QRNIC_REG_AQ_SQ_CI) == 0);		/* nothing consumed */
	CHECK(cq_untouched());				/* nothing completed */
	CHECK(H.irqs == 0);
	CHECK(H.nlog == 1 && strstr(H.log[0], "no admin engine"));
	CHECK(qrnic_dev_stat(d, QRNIC_STAT_ADMIN_CMDS) == 0);

	/* the queue stays in error: further doorbells are refused */
	ignored = qrnic_dev_stat(d, QRNIC_STAT_DOORBELLS_IGNORED);
	post_query(d, 1);
	run_idle(d);
	CHECK(qrnic_dev_stat(d, QRNIC_STAT_DOORBELLS_IGNORED) == ignored + 1);
	CHECK(cq_untouched());

	/* a device reset clears the error; the same happens again */
	wr(d, QRNIC_REG_CTRL, QRNIC_CTRL_RESET);
	CHECK(rd(d, QRNIC_REG_AQ_STATUS) == 0);
	bring_up(d);
	CHECK(rd(d, QRNIC_REG_AQ_STATUS) == QRNIC_AQ_STATUS_ENABLED);
	post_query(d, 0);
	run_idle(d);
	CHECK(rd(d, QRNIC_REG_AQ_STATUS) & QRNIC_AQ_STATUS_ERROR);
	CHECK(cq_untouched());

	/* the rest of the device works: a frame arrives and is dispatched */
	{
		uint8_t frame[64];

		memset(frame, 0, sizeof(frame));
		memset(frame, 0xff, 6);		/* broadcast, not RoCEv2: the Ethernet path */
		frame[12] = 0x08;
		frame[13] = 0x06;
		CHECK(qrnic_dev_rx_frame(d, frame, sizeof(frame)));
		run_idle(d);
		CHECK(!qrnic_dev_busy(d));
	}
	qrnic_dev_free(d);
}

/* ---- an engine that is not the firmware ----------------------------------------------- */
struct fake {
	unsigned runs, resets;
	uint32_t budget;
	struct qrnic_dev *dev;
};

static bool fake_run(void *opaque, struct qrnic_dev *d, uint32_t budget)
{
	struct fake *f = opaque;

	f->runs++;
	f->budget = budget;
	f->dev = d;
	return false;
}

static void fake_reset(void *opaque, struct qrnic_dev *d)
{
	((struct fake *)opaque)->resets++;
}

static const struct qrnic_admin_ops fake_ops = { .run = fake_run, .reset = fake_reset };

static void test_fake_engine(void)
{
	struct fake f = { 0 };
	struct qrnic_dev *d = dev_new(&fake_ops, &f);

	CHECK(d != NULL);
	if (!d)
		return;
	CHECK(f.resets == 1);		/* at creation */
	CHECK(f.runs == 0);
	bring_up(d);
	post_query(d, 0);
	CHECK(f.runs == 0);		/* never inside the doorbell write */
	run_idle(d);
	CHECK(f.runs == 1 && f.dev == d && f.budget > 0);
	CHECK(!(rd(d, QRNIC_REG_AQ_STATUS) & QRNIC_AQ_STATUS_ERROR));
	wr(d, QRNIC_REG_CTRL, QRNIC_CTRL_RESET);
	CHECK(f.resets == 2);
	qrnic_dev_free(d);
}

int main(void)
{
	test_no_engine();
	test_fake_engine();
	printf("model_alone: %d checks, %d failures\n", checks, failures);
	return failures != 0;
}
