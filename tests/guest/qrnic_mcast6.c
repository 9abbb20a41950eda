// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Guest side of tests/test_guest_mcast.py's IPv6 cases: UD multicast to an
 * IPv6 group at the verbs level (ibv_attach_mcast with an IPv6 MGID, an AH
 * to it).  rdma_cm cannot do this on RoCEv2: the kernel's
 * cma_iboe_join_multicast() refuses IPv6 groups with -ENOTSUPP (it has no
 * MLD), on any RoCEv2 device, so `mckey -m ff0e::...` fails before it
 * reaches the driver.  Verbs applications (and the device) have no such
 * limit.  Built on the host against rdma-core 56.1 (the guest's version).
 *
 *   qrnic_mcast6 recv DEV PEER_IP6 GROUP COUNT
 *       UD QP attached to GROUP; prints "READY <qpn>", then receives COUNT
 *       messages (payload and GRH checked: the GRH holds the IPv6 header,
 *       source = PEER_IP6, destination = GROUP), prints "GOT <n> BAD <n>"; detaches, prints
 *       "DETACHED", waits 15 s for anything more, prints "LATE <n>".
 *   qrnic_mcast6 send DEV SRC_IP6 GROUP COUNT
 *       sends COUNT messages to GROUP (remote QPN 0xffffff), all signalled;
 *       prints "SENT <n>".
 * The sender's SRC_IP6 picks the RoCEv2 GID of that address as its source GID.
 * Exit status 0 when everything asked for happened.
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define QKEY	0x11111111u
#define MSG	96		/* payload bytes per message */
#define GRH	40
#define SLOT	(GRH + MSG)
#define DEPTH	64

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fill(uint8_t *p, uint32_t seq)
{
	memcpy(p, &seq, 4);
	for (int i = 4; i < MSG; i++)
		p[i] = (uint8_t)(seq * 7 + i * 13);
}

static int check(const uint8_t *p, uint32_t *seq)
{
	memcpy(seq, p, 4);
	for (int i = 4; i < MSG; i++)
		if (p[i] != (uint8_t)(*seq * 7 + i * 13))
			return -1;
	return 0;
}

static int find_gid(struct ibv_context *ctx, const union ibv_gid *want)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(ctx, 1, &pa))
		return -1;
	for (int i = 0; i < pa.gid_tbl_len && i < 256; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, 1, i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && !memcmp(&e.gid, want, sizeof(e.gid)))
			return i;
	}
	return -1;
}

int main(int argc, char **argv)
{
	if (argc != 6 || (strcmp(argv[1], "recv") && strcmp(argv[1], "send"))) {
		fprintf(stderr, "usage: %s recv DEV PEER_IP6 GROUP COUNT | send DEV SRC_IP6 GROUP COUNT\n",
			argv[0]);
		return 2;
	}
	int recv = !strcmp(argv[1], "recv"), count = atoi(argv[5]);
	union ibv_gid src, group;

	if (inet_pton(AF_INET6, argv[3], &src) != 1 || inet_pton(AF_INET6, argv[4], &group) != 1 ||
	    count < 1 || count > 100000) {
		fprintf(stderr, "bad address or count\n");
		return 2;
	}
	struct ibv_device **list = ibv_get_device_list(NULL), *dev = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[2]))
			dev = list[i];
	struct ibv_context *ctx = dev ? ibv_open_device(dev) : NULL;

	if (!ctx) {
		fprintf(stderr, "no device %s\n", argv[2]);
		return 1;
	}
	int gidx = recv ? 0 : find_gid(ctx, &src);

	if (gidx < 0) {
		fprintf(stderr, "no RoCEv2 GID for %s on %s\n", argv[3], argv[2]);
		return 1;
	}
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 2 * DEPTH, NULL, NULL, 0) : NULL;
	static uint8_t buf[DEPTH * SLOT];
	struct ibv_mr *mr = cq ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = DEPTH, .max_recv_wr = DEPTH, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = mr ? ibv_create_qp(pd, &ia) : NULL;

	if (!qp) {
		perror("pd/cq/mr/qp");
		return 1;
	}
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		return perror("INIT"), 1;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		return perror("RTR"), 1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		return perror("RTS"), 1;

	struct ibv_wc wc[16];

	if (recv) {
		for (int i = 0; i < DEPTH; i++) {
			struct ibv_sge sge = { (uintptr_t)(buf + i * SLOT), SLOT, mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

			if (ibv_post_recv(qp, &wr, &bad))
				return perror("post_recv"), 1;
		}
		if (ibv_attach_mcast(qp, &group, 0))
			return perror("attach_mcast"), 1;
		printf("READY %u\n", qp->qp_num);
		fflush(stdout);

		static uint8_t seen[100000];
		int got = 0, bad = 0, late = 0, detached = 0;
		double end = now() + 120;

		while (now() < end) {
			int n = ibv_poll_cq(cq, 16, wc);

			if (n < 0)
				return perror("poll_cq"), 1;
			if (!n) {
				nanosleep(&(struct timespec){ 0, 200000 }, NULL);
				continue;
			}
			for (int k = 0; k < n; k++) {
				uint8_t *slot = buf + wc[k].wr_id * SLOT;
				uint32_t seq;

				if (detached) {
					late++;
				} else if (wc[k].status != IBV_WC_SUCCESS || wc[k].opcode != IBV_WC_RECV ||
					   wc[k].byte_len != SLOT || !(wc[k].wc_flags & IBV_WC_GRH) ||
					   memcmp(slot + 24, &group, 16) || memcmp(slot + 8, &src, 16) ||
					   (slot[0] >> 4) != 6 || check(slot + GRH, &seq) ||
					   seq >= (uint32_t)count || seen[seq]) {
					fprintf(stderr, "bad: status %d opcode %d len %u flags %#x\n",
						wc[k].status, wc[k].opcode, wc[k].byte_len, wc[k].wc_flags);
					bad++;
				} else {
					seen[seq] = 1;
					got++;
				}
				struct ibv_sge sge = { (uintptr_t)slot, SLOT, mr->lkey };
				struct ibv_recv_wr wr = { .wr_id = wc[k].wr_id, .sg_list = &sge,
							  .num_sge = 1 }, *bw;

				if (ibv_post_recv(qp, &wr, &bw))
					return perror("post_recv"), 1;
			}
			if (!detached && got + bad >= count) {
				printf("GOT %d BAD %d\n", got, bad);
				if (ibv_detach_mcast(qp, &group, 0))
					return perror("detach_mcast"), 1;
				printf("DETACHED\n");
				fflush(stdout);
				detached = 1;
				end = now() + 15;
			}
		}
		if (!detached)
			printf("GOT %d BAD %d\n", got, bad);
		printf("LATE %d\n", late);
		return !(detached && got == count && !bad && !late);
	}

	struct ibv_ah_attr aa = {
		.is_global = 1, .port_num = 1,
		.grh = { .dgid = group, .sgid_index = gidx, .hop_limit = 1 },
	};
	struct ibv_ah *ah = ibv_create_ah(pd, &aa);

	if (!ah)
		return perror("create_ah"), 1;
	int sent = 0, posted = 0;

	while (sent < count) {
		if (posted - sent < DEPTH && posted < count) {
			uint8_t *p = buf + (posted % DEPTH) * SLOT;
			struct ibv_sge sge = { (uintptr_t)p, MSG, mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = posted, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.ud = { .ah = ah, .remote_qpn = 0xffffff, .remote_qkey = QKEY },
			}, *bad;

			fill(p, posted);
			if (ibv_post_send(qp, &wr, &bad))
				return perror("post_send"), 1;
			posted++;
			continue;
		}
		int n = ibv_poll_cq(cq, 16, wc);

		for (int k = 0; k < n; k++) {
			if (wc[k].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "send status %d\n", wc[k].status);
				return 1;
			}
			sent++;
		}
	}
	printf("SENT %d\n", sent);
	return 0;
}
