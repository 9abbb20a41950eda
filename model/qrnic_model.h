/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qrnic device model: public interface for hosts (QEMU glue, the standalone
 * simulator, the unit-test harness).
 *
 * The model is plain C11 and touches the outside world only through
 * struct qrnic_host_ops.  It keeps no pointer into host memory across
 * calls: every descriptor is copied in through dma_read, validated, then
 * used.  It never runs device work inside a register/doorbell write: such a
 * write records what is pending and calls ops->schedule(); the host then
 * calls qrnic_dev_run() from a bottom half (or its own loop).
 */
#ifndef QRNIC_MODEL_H
#define QRNIC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "abi/qrnic_abi.h"
#include "qrnic_tracepoints.h"

struct qrnic_dev;

enum qrnic_log_level {
	QRNIC_LOG_GUEST_ERROR,	/* the guest did something wrong */
	QRNIC_LOG_UNIMP,	/* the guest used something not implemented */
	QRNIC_LOG_INFO,
};

/* Trace record handed to ops->trace (optional).  One per pipeline stage. */
enum qrnic_trace_type {
	QRNIC_TR_DOORBELL,	/* a = queue kind (0 SQ, 1 RQ, 2 CQ), b = index */
	QRNIC_TR_WQE_FETCH,	/* a = sq index, b = opcode */
	QRNIC_TR_TRANSLATE,	/* a = key, b = length */
	QRNIC_TR_TX,		/* a = bth opcode, b = frame length */
	QRNIC_TR_RX,		/* a = bth opcode, b = frame length */
	QRNIC_TR_DMA_READ,	/* a = length, addr = bus address */
	QRNIC_TR_DMA_WRITE,	/* a = length, addr = bus address */
	QRNIC_TR_ACK,		/* a = syndrome, psn */
	QRNIC_TR_NAK,		/* a = syndrome, psn */
	QRNIC_TR_RETRANSMIT,	/* a = reason (0 timeout, 1 seq NAK, 2 RNR) */
	QRNIC_TR_CQE,		/* a = cqn, b = status */
	QRNIC_TR_EQE,		/* a = eqn, b = type */
	QRNIC_TR_IRQ,		/* a = vector */
	QRNIC_TR_DROP,		/* a = reason (QRNIC_STAT_*), b = frame length */
	QRNIC_TR_QP_STATE,	/* a = old state, b = new state */
	QRNIC_TR_ADMIN,		/* a = opcode, b = status */
	QRNIC_TR_WINDOW,	/* a = new loss window (packets), psn = una */
	QRNIC_TR_COUNT
};

struct qrnic_trace_ev {
	uint64_t t_ns;
	uint32_t type;		/* enum qrnic_trace_type */
	uint32_t qpn;		/* 0 when not QP related */
	uint32_t psn;
	uint32_t a, b;
	uint64_t addr;
};
const char *qrnic_trace_name(uint32_t type);

struct qrnic_host_ops {
	/* Host memory by bus address.  Return 0, or -1 when the access fails
	 * (outside RAM, IOMMU fault); the model then takes its error path. */
	int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
	int (*dma_write)(void *opaque, uint64_t addr, const void *buf, size_t len);
	/* Raise MSI-X vector.  Never called from inside reg/db writes. */
	void (*irq)(void *opaque, unsigned vector);
	/* Put one Ethernet frame (without FCS) on the wire. */
	void (*tx_frame)(void *opaque, const uint8_t *frame, size_t len);
	/* Virtual clock in ns, and a single one-shot timer: the host calls
	 * qrnic_dev_timer_fire() at or after deadline.  UINT64_MAX cancels. */
	uint64_t (*now_ns)(void *opaque);
	void (*timer_arm)(void *opaque, uint64_t deadline_ns);
	/* Ask the host to call qrnic_dev_run() soon, outside the current call. */
	void (*schedule)(void *opaque);
	/* One line, no trailing newline. */
	void (*log)(void *opaque, enum qrnic_log_level level, const char *msg);
	/* Optional (may be NULL). */
	void (*trace)(void *opaque, const struct qrnic_trace_ev *ev);
	/* Optional (may be NULL): like tx_frame, but the host takes the
	 * buffer (from qrnic_frame_buf_alloc) instead of copying it, and
	 * releases it with qrnic_frame_buf_free (or hands it on, e.g. to
	 * qrnic_dev_rx_frame_buf).  Without it the model calls tx_frame. */
	void (*tx_frame_buf)(void *opaque, uint8_t *frame, size_t len);
	/* Optional (may be NULL), for simulators whose wire hands frames
	 * untouched from device to device in one process (tx_frame_buf,
	 * qrnic_dev_rx_frame_buf, a trusted wire: qrnic_dev_set_trusted_wire):
	 * a pointer to [addr, addr + len) of host memory that stays valid
	 * while the memory does, or NULL if there is none (the model then
	 * calls dma_read, which reports the error if any).  Counts as a DMA
	 * read of those bytes.  The model then sends the payload of a packet
	 * by reference (qrnic_frame_buf_fill) and the receiving device copies
	 * it from there into its own memory: the bytes are read when the
	 * frame arrives rather than when it leaves, which verbs allow (a
	 * buffer must not change until its work request completes, and a
	 * retransmission reads it again anyway). */
	const void *(*dma_map)(void *opaque, uint64_t addr, size_t len);
	/* Optional (may be NULL), with dma_map: the host holds something for
	 * each pointer dma_map returns (QEMU: a reference on the guest RAM
	 * region, address_space_map) until the model passes it back here,
	 * exactly once, with the same ptr and len: when the bytes were copied
	 * (qrnic_frame_buf_fill, the receiving device's write) or not used,
	 * or the frame buffer holding them is freed.  Called on whichever
	 * thread frees or fills the buffer, possibly after the device is gone
	 * (hence no opaque).  With it, a device with a lazy ICRC
	 * (qrnic_dev_set_lazy_icrc) sends IPv4 payloads by reference too
	 * (headers by description, the ICRC left to qrnic_frame_buf_fill);
	 * without it only on a trusted wire. */
	void (*dma_unmap)(const void *ptr, size_t len);
	/* Optional (may be NULL): a frame the port delivered to itself
	 * instead of putting it on the wire (local loopback: its destination
	 * MAC is the port's own), for captures and frame logs.  Called when
	 * the frame would have left the port, with its bytes built; the
	 * device then receives it as if it had arrived. */
	void (*loopback)(void *opaque, const uint8_t *frame, size_t len);
	/* Optional (may be NULL): a typed trace point (qrnic_tracepoints.h),
	 * args[i] its i-th field.  Guest errors (err_*) and tolerated
	 * undefined behaviour (ub_*) come whenever they happen; device events
	 * only while tracing is on (ops->trace set, qrnic_dev_set_trace), one
	 * right after each trace record. */
	void (*tracepoint)(void *opaque, enum qrnic_tp tp, const uint64_t *args);
};

/* Frame buffers that change hands without a copy (ops->tx_frame_buf,
 * qrnic_dev_rx_frame_buf): room for len <= QRNIC_FRAME_BUF_MAX bytes, or
 * NULL.  Whoever holds a buffer last frees it; any device, any thread. */
#define QRNIC_FRAME_BUF_MAX	QRNIC_ETH_MAX_FRAME
uint8_t *qrnic_frame_buf_alloc(size_t len);
void qrnic_frame_buf_free(uint8_t *buf);
/* A frame handed over by tx_frame_buf may carry its payload by reference
 * and its headers by description (only from a device whose host has
 * ops->dma_map, on a trusted wire): a host that reads or changes the
 * frame's bytes (capture, log, corruption) calls this first, which builds
 * the headers and copies the payload into the buffer.  Harmless on any
 * other. */
void qrnic_frame_buf_fill(uint8_t *buf);
/* Only the headers: built in the buffer where they are by description, a
 * payload by reference left so (the receiving device parses the headers
 * and still copies the payload from where it is).  For a wire that reads
 * or changes header bytes only, e.g. a switch (forwarding, ECN marking),
 * and delivers each flow's frames in order, so that the referenced bytes
 * cannot change before the frame arrives (see ops->dma_map).  Harmless
 * on any other frame. */
void qrnic_frame_buf_fill_headers(uint8_t *buf);
/* Whether a frame buffer's ICRC is still to be computed (a lazy ICRC:
 * qrnic_dev_set_lazy_icrc); qrnic_frame_buf_fill computes it. */
bool qrnic_frame_buf_icrc_pending(const uint8_t *buf);
/* Whether a frame buffer's headers are by description (not yet built). */
bool qrnic_frame_buf_described(const uint8_t *buf);
/* A frame buffer's destination MAC (6 bytes) without building it: its
 * description's, else its first bytes (len >= 6). */
const uint8_t *qrnic_frame_buf_dmac(const uint8_t *buf);

/*
 * Device configuration.  Every field is a parameter of the table in
 * model/config.c (qrnic_config_param()): its name, type, default, bounds
 * and meaning live there and only there; QEMU's -device properties, the
 * harness's "name=value" items and docs/spec.md section 16.2 are made
 * from that table.
 */
struct qrnic_config {
	uint8_t  mac[6];
	uint32_t eth_mtu;
	uint32_t speed_mbps;
	uint32_t max_qp;
	uint32_t max_qp_wr;
	uint32_t max_cq;
	uint32_t max_cqe;
	uint32_t max_mr;
	uint32_t max_pd;
	uint32_t max_ah;
	uint32_t max_eq;
	uint32_t max_uctx;
	uint32_t max_srq;
	uint32_t max_xrcd;
	uint32_t max_mtt;
	uint64_t max_mr_size;
	uint32_t num_vectors;
	uint32_t gid_tbl_len;
	uint32_t max_rd_atomic;
	bool     loss_window;
	/* congestion control (spec 12.15; DCQCN parameters as ConnectX names them) */
	uint32_t cc_algo;			/* enum qrnic_cc_algo: 0 none, 1 dcqcn, 2 timely */
	bool     np_enable;			/* notification point: send CNPs (ABI 1.9) */
	bool     rp_enable;			/* reaction point: DCQCN reacts to CNPs (ABI 1.9) */
	uint32_t np_min_time_between_cnps;	/* us */
	uint32_t np_cnp_dscp;
	uint32_t rp_dce_tcp_g;			/* 1/1024 */
	uint32_t rp_dce_tcp_rtt;		/* us */
	uint32_t rp_initial_alpha_value;	/* 1/1024 */
	uint32_t rp_min_rate;			/* Mb/s */
	uint32_t rp_min_dec_fac;		/* % */
	uint32_t rp_time_reset;			/* us */
	uint32_t rp_byte_reset;			/* bytes */
	uint32_t rp_threshold;
	uint32_t rp_ai_rate;			/* Mb/s */
	uint32_t rp_hai_rate;			/* Mb/s */
	uint32_t rp_initial_rate;		/* Mb/s; 0: a QP starts at the line rate */
	bool rp_port_hold;			/* a cc QP at the line rate: one packet at a time */
	/* TIMELY (cc_algo 2; Mittal et al., SIGCOMM 2015) */
	uint32_t timely_t_low;			/* us: below, additive increase */
	uint32_t timely_t_high;			/* us: above, multiplicative decrease */
	uint32_t timely_min_rtt;		/* us: normalises the gradient */
	uint32_t timely_delta;			/* Mb/s: additive increase step */
	uint32_t timely_beta;			/* 1024ths: multiplicative decrease factor */
	uint32_t timely_alpha;			/* 1024ths: EWMA weight of a new RTT difference */
	uint32_t timely_hai_n;			/* samples with gradient <= 0 before HAI (N delta) */
	/* the port's receive buffer and the PFC it generates (pfc.c, spec 12.15) */
	uint32_t rx_buffer;			/* bytes; 0: off (frames taken as they come) */
	uint32_t rx_pfc_xoff;			/* bytes of a priority: send XOFF; 0: no PFC */
	uint32_t rx_pfc_xon;			/* bytes of a priority: send XON at or below */
	uint32_t rx_drain_mbps;			/* receive pipeline byte rate (Mb/s); 0: per packet only */
};

enum qrnic_config_type {
	QRNIC_CFG_U32,
	QRNIC_CFG_U64,
	QRNIC_CFG_BOOL,
	QRNIC_CFG_MAC,		/* uint8_t[6]; as a number: the 48 bits, first byte highest */
};

/* A local the compiler need not zero under -ftrivial-auto-var-init=zero
 * (QEMU builds the model and hw/ so): for per-frame locals written in full
 * before they are read, in the model and in hw/qrnic.c.  The fill cost
 * ~1-2% of QEMU's CPU for large WRITEs (perf, issue 23); QEMU 10.0 has no
 * QEMU_UNINITIALIZED yet. */
#if defined(__has_attribute)
#if __has_attribute(uninitialized)
#define QRNIC_NOINIT __attribute__((uninitialized))
#endif
#endif
#ifndef QRNIC_NOINIT
#define QRNIC_NOINIT
#endif

#define QRNIC_CFG_POW2	(1u << 0)	/* must be a power of two */
/* Added after the snapshot's CONF layout version 4 was fixed: a snapshot
 * writes it only when it is not at its default, so that a device at the
 * defaults writes the version-4 layout (tests/fixtures) and older devices
 * load its streams; absent from a stream, it must be at its default on the
 * loading device (model/snapshot.c, docs/qemu.md section 6). */
#define QRNIC_CFG_LATE	(1u << 1)

/* At least the number of parameters in the table (model/config.c checks). */
#define QRNIC_CONFIG_MAX_PARAMS	128

/* One configuration parameter.  Values (def, min, max) are given as
 * numbers whatever the type (a bool: 0 or 1; a MAC: see above). */
struct qrnic_config_param {
	const char *name;	/* the struct qrnic_config field */
	const char *prop;	/* its QEMU -device property; NULL: none */
	enum qrnic_config_type type;
	size_t offset;		/* offsetof(struct qrnic_config, name) */
	uint64_t def, min, max;
	uint32_t flags;		/* QRNIC_CFG_* */
	const char *help;	/* what it is, with its unit */
	const char *seen;	/* where a driver sees it (registers, QUERY_* fields) */
};

/* The i-th parameter, in docs/spec.md order; NULL past the end. */
const struct qrnic_config_param *qrnic_config_param(unsigned i);
/* By field name, or by QEMU property name; NULL if none. */
const struct qrnic_config_param *qrnic_config_param_find(const char *name);
/* A parameter's value in cfg, as a number. */
uint64_t qrnic_config_get(const struct qrnic_config *cfg, const struct qrnic_config_param *p);
/* Store v (not checked against the bounds: qrnic_config_validate() does). */
void qrnic_config_put(struct qrnic_config *cfg, const struct qrnic_config_param *p, uint64_t v);
/* The type's name: "uint32", "uint64", "bool", "mac". */
const char *qrnic_config_type_name(enum qrnic_config_type t);

enum qrnic_config_reason {
	QRNIC_CFG_OK,
	QRNIC_CFG_BELOW_MIN,
	QRNIC_CFG_ABOVE_MAX,	/* including: does not fit the field */
	QRNIC_CFG_NOT_POW2,
	QRNIC_CFG_NOT_UNICAST,	/* a MAC with the group bit set */
	QRNIC_CFG_BAD_VALUE,	/* by name: not a number, boolean or MAC */
	QRNIC_CFG_UNKNOWN,	/* by name: no such parameter (param is NULL) */
};

/* What is wrong with a configuration: which parameter, why, its value and
 * the parameter's bounds. */
struct qrnic_config_error {
	const struct qrnic_config_param *param;
	enum qrnic_config_reason reason;
	uint64_t value, min, max;
};

/* Every parameter to its default. */
void qrnic_config_defaults(struct qrnic_config *cfg);
/* 0 if valid; otherwise -1 and, if e is not NULL, the first parameter (in
 * table order) that is wrong. */
int qrnic_config_validate(const struct qrnic_config *cfg, struct qrnic_config_error *e);
/* The configuration parameter of QUERY_CC/SET_CC parameter id
 * (QRNIC_CC_P_*, model/abi/qrnic_admin.h), or NULL. */
const struct qrnic_config_param *qrnic_cc_param(uint32_t id);
/* The range check of one value of p (what qrnic_config_validate() applies
 * to each parameter): 0, or -1 and e. */
int qrnic_config_check_value(const struct qrnic_config_param *p, uint64_t v,
			     struct qrnic_config_error *e);
/* Set one parameter by name (field or property name) from text: a number
 * (C syntax: 0x.. accepted), for a bool also on/off/true/false/yes/no, for
 * the MAC aa:bb:cc:dd:ee:ff.  Range checks are qrnic_config_validate()'s;
 * a number too large for the field is QRNIC_CFG_ABOVE_MAX.  0 or -1 and e. */
int qrnic_config_set(struct qrnic_config *cfg, const char *name, const char *value,
		     struct qrnic_config_error *e);
/* The reason for humans, without the parameter's name: "must be in
 * 4..65536 (got 1)".  Returns what snprintf() returns. */
int qrnic_config_reason_str(const struct qrnic_config_error *e, char *buf, size_t len);
/* "<name> <reason>", e.g. "max_qp must be in 4..65536 (got 1)"; name NULL:
 * the field name. */
int qrnic_config_error_str(const struct qrnic_config_error *e, const char *name,
			   char *buf, size_t len);
/* 0 if valid; otherwise -1 and qrnic_config_error_str() in err. */
int qrnic_config_check(const struct qrnic_config *cfg, char *err, size_t errlen);

/*
 * The admin engine: what executes the commands of the admin queue.  The
 * model owns the admin queue's registers and doorbell and the device's
 * tables; the commands are the firmware's business (firmware/, which
 * offers its engine as qrnic_fw_admin_ops in qrnic_firmware.h).  The model
 * does not know the firmware: whoever creates the device hands it an
 * engine through this table.  A device created without one (NULL) still
 * answers: the first admin doorbell it acts on puts the admin queue into
 * error (AQ_STATUS.ERROR, and an "unimplemented" log line), and nothing
 * is executed.
 */
struct qrnic_admin_ops {
	/* Process up to 'budget' commands from the admin queue (called from
	 * qrnic_dev_run() while the queue is enabled and not in error).
	 * Returns true if commands remain pending. */
	bool (*run)(void *opaque, struct qrnic_dev *dev, uint32_t budget);
	/* Optional (may be NULL): the device was created or reset; the
	 * engine's state goes back to its reset values. */
	void (*reset)(void *opaque, struct qrnic_dev *dev);
};

/* admin: the admin engine (NULL: none), admin_opaque its first argument. */
struct qrnic_dev *qrnic_dev_new(const struct qrnic_config *cfg,
				const struct qrnic_host_ops *ops, void *opaque,
				const struct qrnic_admin_ops *admin, void *admin_opaque);
void qrnic_dev_free(struct qrnic_dev *dev);
/* Function-level reset: every resource destroyed, registers to reset values. */
void qrnic_dev_reset(struct qrnic_dev *dev);

/* BAR0 and BAR2 accesses.  size is 1, 2, 4 or 8. */
uint64_t qrnic_dev_reg_read(struct qrnic_dev *dev, uint64_t off, unsigned size);
void qrnic_dev_reg_write(struct qrnic_dev *dev, uint64_t off, uint64_t val, unsigned size);
uint64_t qrnic_dev_db_read(struct qrnic_dev *dev, uint64_t off, unsigned size);
void qrnic_dev_db_write(struct qrnic_dev *dev, uint64_t off, uint64_t val, unsigned size);

/* A frame arrived from the wire.  The model copies it; it is processed in
 * qrnic_dev_run().  Returns false if the receive queue was full (dropped). */
bool qrnic_dev_rx_frame(struct qrnic_dev *dev, const uint8_t *frame, size_t len);
/* True while the device's receive queue has no room: a frame given now is
 * dropped (rx_drop_other).  A host whose wire can hold frames back (QEMU's
 * net queues) waits instead, as a lossless fabric pauses the sender. */
bool qrnic_dev_rx_full(const struct qrnic_dev *dev);
/* Whether the receive queue has room for n frames now (a train of n
 * packets: qrnic_frame_buf_train_len). */
bool qrnic_dev_rx_has_room(const struct qrnic_dev *dev, uint32_t n);
/* The same without a copy: the model takes buf (from qrnic_frame_buf_alloc)
 * whatever the outcome, and frees it when done with it. */
bool qrnic_dev_rx_frame_buf(struct qrnic_dev *dev, uint8_t *buf, size_t len);
/* The same for a frame the host vouches for: buf is a frame a device of
 * this process built with its ICRC (ops->tx_frame_buf, no trusted wire)
 * and nothing has changed a byte of it since (QEMU's hand-over between
 * qrnic ports, hw/qrnic.c).  The receiving device then does not compute
 * its ICRC again -- one CRC pass over the frame fewer; every other check
 * stays.  While the device has a fault plan loaded it checks anyway (its
 * rules may change the bytes). */
bool qrnic_dev_rx_frame_buf_vouched(struct qrnic_dev *dev, uint8_t *buf, size_t len);

/* Trace events go to ops->trace while on (the default).  A host that
 * would discard them turns them off and saves the model the work. */
void qrnic_dev_set_trace(struct qrnic_dev *dev, bool on);

/* A lazy ICRC, for a host that calls qrnic_frame_buf_fill before
 * anything but a qrnic device of this process reads a frame handed over by
 * ops->tx_frame_buf (QEMU's hand-over between qrnic ports, hw/qrnic.c):
 * the IPv4 RoCEv2 frames the device builds into frame buffers leave with
 * their ICRC field not yet written, and qrnic_frame_buf_fill computes it
 * -- the same bytes -- for whoever reads them (a capture, a fault plan, a
 * snapshot, a receiver that checks it, a netdev).  A receiving device
 * the host vouches for (qrnic_dev_rx_frame_buf_vouched) never needs it:
 * one CRC pass over each frame fewer.  With ops->dma_unmap, such a frame
 * whose payload goes by reference (ops->dma_map), or that has none, also
 * leaves with its headers by description (qrnic_frame_buf_described; the
 * destination MAC without a build: qrnic_frame_buf_dmac), which the fill
 * builds first; a receiving device takes the description as parsed.
 * Off by default; not reset. */
void qrnic_dev_set_lazy_icrc(struct qrnic_dev *dev, bool on);

/*
 * Trains, for a host with a lazy ICRC and ops->dma_unmap whose
 * ops->tx_frame_buf either hands a train whole to another qrnic device of
 * the process (qrnic_dev_rx_frame_buf_vouched) or splits it: the packets
 * of an RC WRITE message the device sends one after the other, described
 * and by reference, then leave as one frame buffer of up to 32 packets
 * (qrnic_frame_buf_train_len > 1; where trains form -- trains on, a
 * lazy ICRC, no fault plan, untimed, no trace -- the requester sends that
 * many per service step), and the receiving device takes them as one
 * (issue 23: T1's per-frame costs, docs/timing.md 5.6).  Anything
 * that would read the bytes of a train -- a capture, a netdev, a net
 * queue, a fault plan -- splits it first into the frames it stands for
 * (qrnic_frame_buf_train_split: the same frames, each by description and
 * by reference as they would have left).  Off by default; not reset.
 */
void qrnic_dev_set_trains(struct qrnic_dev *dev, bool on);
/* How many packets a frame buffer stands for: 1, or a train's. */
uint32_t qrnic_frame_buf_train_len(const uint8_t *buf);
/* A train's frames, in order, each to each() (which takes the buffer);
 * buf itself is the first.  A frame that cannot be had (no memory) is
 * lost, as one a full queue drops. */
void qrnic_frame_buf_train_split(uint8_t *buf, void (*each)(void *opaque, uint8_t *buf, size_t len),
				 void *opaque);

/*
 * Doorbells that ride on the acknowledgement, for a host where waking the
 * device costs the guest (QEMU under TCG: the vCPU that rang shares the
 * host CPUs with the loop it wakes; hw/qrnic.c doorbell-batch).  An SQ
 * doorbell of a QP in RTS that has packets awaiting acknowledgement (its
 * retransmission timer armed, no RNR wait) records the new producer index
 * without asking the host for a run (ops->schedule): the acknowledgement,
 * NAK, RNR or retransmission timer the QP waits for kicks it anyway, and
 * its WQEs go then -- at most one round trip or one timeout later, in
 * order, which verbs allow.  Every other doorbell is taken at once, and so
 * is every doorbell while a timing profile is on (its latencies are
 * calibrated from the doorbell).  Counted in qrnic_dev_db_batched.  With
 * the same setting an RQ doorbell of a QP in RTR or RTS asks for no run
 * either: its receive WQEs are taken when messages arrive (a QP in ERR
 * still gets one, to flush them); counted in qrnic_dev_rq_db_quiet.  Off
 * by default; not reset.
 */
void qrnic_dev_set_db_batch(struct qrnic_dev *dev, bool on);
uint64_t qrnic_dev_db_batched(const struct qrnic_dev *dev);
uint64_t qrnic_dev_rq_db_quiet(const struct qrnic_dev *dev);
/* How often the device took an SQ producer index from a QP's SQ record
 * (ABI 1.11, spec 8.6.2) that no doorbell had brought: posts that made no
 * MMIO write, or whose doorbell came later.  Not reset. */
uint64_t qrnic_dev_sq_rec_taken(const struct qrnic_dev *dev);

/* Simulators only: a trusted wire.  The device neither computes the ICRC
 * of the RoCEv2 frames it sends (the field is 0) nor checks it on the
 * frames it receives -- every other check stays -- and, if the host has
 * ops->dma_map, sends IPv4 payloads by reference.  For a simulated wire
 * that corrupts nothing and is not captured, with the same setting at
 * both ends.  Off by default (and after reset it stays as set); while a
 * fault plan is loaded the device computes and checks the ICRC anyway. */
void qrnic_dev_set_trusted_wire(struct qrnic_dev *dev, bool on);

/* Simulators only: the host's clock as a variable, which the device then
 * reads instead of calling ops->now_ns (the variable must hold what
 * now_ns would return, whenever the device runs).  NULL, the default,
 * calls now_ns.  Stays as set across resets. */
void qrnic_dev_set_clock(struct qrnic_dev *dev, const uint64_t *now);

/* Do pending work with a bounded budget; calls ops->schedule() again if
 * work remains.  Returns true if anything was done. */
bool qrnic_dev_run(struct qrnic_dev *dev);
/* The timer armed through ops->timer_arm expired. */
void qrnic_dev_timer_fire(struct qrnic_dev *dev);
/* True if qrnic_dev_run() has work to do now. */
bool qrnic_dev_busy(const struct qrnic_dev *dev);
/* Self-check of the device's internal QP lists (work list, flush queue):
 * links agree, no cycle, every QP on a list once.  For tests and fuzzers;
 * walks are bounded by max_qp.  0, or -1 with a reason in why. */
int qrnic_dev_check_lists(struct qrnic_dev *dev, char *why, size_t len);
/* Self-check of the MPT slot and MTT allocators against the MPT and the
 * MTT map (model/mr.c): for tests; costs a walk of the slots and entries
 * ever used.  0, or -1 with a reason in why. */
int qrnic_dev_check_alloc(struct qrnic_dev *dev, char *why, size_t len);
/* Run that check after every QP service step too; failures are counted
 * (and the first one logged as an error).  Off by default. */
void qrnic_dev_set_selfcheck(struct qrnic_dev *dev, bool on);
uint32_t qrnic_dev_selfcheck_failures(const struct qrnic_dev *dev);

/*
 * Snapshots (migration, savevm/loadvm; docs/qemu.md section 9): the
 * device's whole state as a byte stream of versioned sections.  Call
 * between the other calls, never from inside one (not from ops callbacks).
 * Save: 0 and a malloc'd *buf of *len bytes (the caller frees it), or -1
 * (out of memory).  Load: into a device of the same configuration and
 * timing profile; 0, or -1 with the reason in err -- a stream that is
 * truncated, corrupt or inconsistent is refused, never half-loaded: the
 * device is then reset.  Host settings (trace, trusted wire, clock) stay
 * as the host set them.  After a load the device re-arms its timer
 * (ops->timer_arm) and asks to run (ops->schedule) if it has work.
 */
int qrnic_dev_save(struct qrnic_dev *dev, uint8_t **buf, size_t *len);
int qrnic_dev_load(struct qrnic_dev *dev, const uint8_t *buf, size_t len, char *err,
		   size_t errlen);
/* The sections of a stream, one "TAG version [optional] bytes" line each
 * (tests, docs).  0, or -1 if the stream is malformed or out is too small. */
int qrnic_snap_describe(const uint8_t *buf, size_t len, char *out, size_t outlen);

/*
 * Timing model (docs/timing.md).  profile: "functional" (the default: every
 * effect visible at once), "cx5-100g" or "teach"; overrides: NULL or
 * "param=value,..." with the parameter names of QRNIC_TIMING_PARAMS
 * (qrnic_timing.h; '-' may stand for '_').  Resets the timing state.
 * 0, or -1 with a message in err.
 */
int qrnic_dev_set_timing(struct qrnic_dev *dev, const char *profile, const char *overrides,
			 char *err, size_t errlen);
const char *qrnic_dev_timing_profile(const struct qrnic_dev *dev);

void qrnic_dev_set_link(struct qrnic_dev *dev, bool up);
/* PFC (docs/congestion.md): the link partner asked the port to stop
 * (paused true: an XOFF) or to go on (false: an XON).  While paused, no
 * frame leaves the port: under a timing profile the frames whose time
 * comes are held, and on the XON they leave back to back at the port's
 * rate from then on (frames booked behind them move back so that none
 * overtakes another).  Under the functional profile frames leave when
 * made: nothing is held (there is no modelled port).  Saved by snapshots. */
void qrnic_dev_port_pause(struct qrnic_dev *dev, bool paused);
bool qrnic_dev_port_paused(const struct qrnic_dev *dev);
/* 802.1Qbb PFC frames (pfc.c, docs/congestion.md).  A frame with EtherType
 * 0x8808 given to qrnic_dev_rx_frame* is taken by the port: a PFC frame
 * pauses the priorities it names for their times (quanta of 512 bit times
 * at the port's rate; 0 resumes), an 802.3x PAUSE all eight; anything else
 * is counted (pfc_malformed) and ignored.  qrnic_pfc_frame builds one:
 * to 01:80:C2:00:00:01, opcode 0x0101, time[p] for each priority p set
 * in class_enable, zero padded to 60 bytes; it returns the length. */
#define QRNIC_PFC_FRAME_LEN	60
size_t qrnic_pfc_frame(uint8_t out[QRNIC_PFC_FRAME_LEN], const uint8_t smac[6], uint8_t class_enable,
		       const uint16_t time[8]);
/* a frame's priority: its VLAN PCP, or its IP DSCP >> 3, or 0 */
int qrnic_frame_priority(const uint8_t *frame, size_t len);
/* until when (modelled ns) priority prio is paused; in the past: not paused */
uint64_t qrnic_dev_pfc_paused_until(const struct qrnic_dev *dev, int prio);
/* The port's receive buffer (rx_buffer != 0 under a timing profile; pfc.c,
 * spec 12.15): bytes of each priority in it now, the most there were (all
 * priorities together and per priority), and the priorities the port has
 * sent an XOFF for and not yet an XON.  0, or -1 if the buffer is off;
 * out may be NULL to ask only that. */
struct qrnic_rxbuf_info {
	uint64_t used, max_used;
	uint64_t prio[8], prio_max[8];
	uint8_t  xoff;		/* bit p: priority p paused by us */
};
int qrnic_dev_rxbuf_info(struct qrnic_dev *dev, struct qrnic_rxbuf_info *out);
uint64_t qrnic_dev_stat(const struct qrnic_dev *dev, enum qrnic_stat s);
/* The value in use of congestion control parameter id (QRNIC_CC_P_*: what
 * QUERY_CC answers, SET_CC changes), for the host (QEMU's "cc" property).
 * 0, or -1 if id is no parameter. */
int qrnic_dev_cc_param(const struct qrnic_dev *dev, uint32_t id, uint32_t *value);
/* A QP's congestion control state (spec 12.15), its timers brought up to
 * the device's time first.  0, or -1 if qpn is not a QP. */
struct qrnic_cc_info {
	uint32_t algo;		/* cc_algo */
	bool     limited;	/* the reaction point limits the rate */
	double   rate_mbps;	/* current rate (the line rate when not limited) */
	double   target_mbps;	/* target rate */
	double   alpha;
	uint32_t t_stage, b_stage;	/* rate-increase events since the last CNP: timer, byte counter */
	uint64_t cnps;		/* CNPs this QP handled */
	double   rtt_ns;	/* TIMELY: the latest RTT sample (0: none) */
	uint64_t rtts;		/* TIMELY: RTT samples taken */
};
int qrnic_qp_cc_info(struct qrnic_dev *dev, uint32_t qpn, struct qrnic_cc_info *out);
const char *qrnic_stat_name(enum qrnic_stat s);

/*
 * Read-only snapshots of the device's queues (model/query.c), for
 * debuggers and live views: QEMU's "qps", "cqs", "eqs" and "srqs"
 * properties, the harness (hx_query_view) and scripts/qrnic-view.  They
 * read guest-influenced state and only read it: every loop is bounded by
 * the table size, no pointer of the state is followed, any value of any
 * field is reported as it is.  Every field is a uint32_t, so a record is
 * also an array of qrnic_view_nfields() numbers, named by qrnic_view_field().
 * PSNs are 24-bit; ring indexes are free running (occupancy: pi - ci).
 */
struct qrnic_qp_view {
	uint32_t qpn, type, state;		/* QRNIC_QPT_*, QRNIC_QPS_* */
	uint32_t dest_qpn, path_mtu;		/* path_mtu in bytes, 0: not set */
	uint32_t send_cqn, recv_cqn, srqn;
	uint32_t sq_depth, sq_pi, sq_next, sq_ci;	/* doorbell, fetched, completed */
	uint32_t rq_depth, rq_pi, rq_ci;
	uint32_t next_psn, una_psn, high_psn;	/* requester: next new, oldest unacked, highest sent + 1 */
	uint32_t send_psn;			/* requester: next packet sent (goes back on a retry) */
	uint32_t epsn, msn;			/* responder: expected PSN, messages */
	uint32_t inflight;			/* high_psn - una_psn: packets not acknowledged */
	uint32_t cwnd;				/* loss window, packets (spec 12.6) */
	uint32_t rd_atomic_out;
	uint32_t timeout, retry_cnt, retry_left, rnr_retry, rnr_left;
	uint32_t rnr_wait, timer_armed, stopped, nak_sent, on_work;	/* 0/1 */
};

struct qrnic_cq_view {
	uint32_t cqn, eqn, depth;
	uint32_t pi;		/* next CQE slot (reserved ones count) */
	uint32_t ci;		/* the consumer index the device last got */
	uint32_t written;	/* CQEs written */
	uint32_t armed, error;
	uint32_t mod_count, mod_period_us;	/* MODIFY_CQ's moderation (0, 0: none) */
};

struct qrnic_eq_view {
	uint32_t eqn, vector, depth, pi, ci;
	uint32_t async, armed, overflow;
};

struct qrnic_srq_view {
	uint32_t srqn, depth, pi, ci, limit, xrcd, cqn;
};

enum qrnic_view_kind { QRNIC_VIEW_QP, QRNIC_VIEW_CQ, QRNIC_VIEW_EQ, QRNIC_VIEW_SRQ,
		       QRNIC_VIEW_KINDS };

/* Fields of a record of kind k: how many, and the i-th's name (the member
 * name; NULL past the end or for a bad kind). */
unsigned qrnic_view_nfields(enum qrnic_view_kind k);
const char *qrnic_view_field(enum qrnic_view_kind k, unsigned i);
/* The kind's name: "qp", "cq", "eq", "srq" (NULL if bad). */
const char *qrnic_view_kind_name(enum qrnic_view_kind k);
/* Up to max records of the valid objects of kind k whose number is >=
 * start, in number order, into out (an array of the kind's struct).
 * Returns how many; *next (if not NULL) is where to go on from, or 0 when
 * the table has been walked to its end.  Visits at most the table size. */
unsigned qrnic_dev_view(struct qrnic_dev *d, enum qrnic_view_kind k, uint32_t start,
			void *out, unsigned max, uint32_t *next);
/* "RESET" "INIT" "RTR" "RTS" "SQD" "SQE" "ERR", "?" otherwise. */
const char *qrnic_qp_state_name(uint32_t state);
/* "RC" "UC" "UD" "GSI" "XRC_INI" "XRC_TGT", "?" otherwise. */
const char *qrnic_qp_type_name(uint32_t type);

#endif
