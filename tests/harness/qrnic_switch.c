// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic-switch: the simulator's switch (harness.c, hx_switch_*) against
 * real time, for VM topologies (docs/congestion.md "VM topologies").
 *
 * Each port is a UDP socket on the host exchanging raw Ethernet frames with
 * one QEMU `-netdev dgram` (one frame per datagram, no header).  The frames
 * go through the very switch the simulator uses -- hx_switch_attach() on a
 * world whose devices only stand for ports, hx_switch_ext() -- so rates,
 * output queues, RED/ECN marking and PFC are one implementation.  The
 * world's clock follows CLOCK_MONOTONIC: before each batch of datagrams the
 * world is advanced to the host's now, the datagrams enter the switch at
 * that instant, and the loop sleeps (ppoll, nanosecond timeout) until the
 * next frame is due to leave a queue, a datagram arrives or a signal comes.
 *
 *   qrnic-switch --port 127.0.0.1:40001=127.0.0.1:40000 --port ... \
 *                --rate 200M --buffer 1M --kmin 40K --kmax 160K --pmax 0.2
 *
 * Counters per port and queue are printed as JSON on SIGTERM/SIGINT (stdout)
 * and written to --stats every --stats-interval and on SIGUSR1.  Bad
 * arguments: a message and exit 2.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli_units.h"
#include "harness.h"

#define MAX_PORTS	HX_MAX_DEV
#define QS_STR_(x)	#x
#define QS_STR(x)	QS_STR_(x)
#define RX_BATCH	64	/* datagrams read from one port per loop iteration */

struct port {
	int fd;
	struct sockaddr_in local, remote;
	bool have_remote;	/* given, or learned from the first datagram */
	char spec[96];
	uint64_t send_errors, truncated;
};

static struct port ports[MAX_PORTS];
static int nports;
static hx_world *world;
static struct hx_switch_cfg swc;
static const char *stats_path;
static uint64_t stats_interval_ns = 1000000000ull;
static uint64_t duration_ns;
static uint64_t t0_mono;
static volatile sig_atomic_t sig_stop, sig_dump;

static void die2(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die2(const char *fmt, ...)
{
	va_list ap;

	fputs("qrnic-switch: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(2);
}

/* the numbers: cli_units.c, shared with qrnic-sim (same suffixes, same
 * option names) */
static uint64_t parse_bytes(const char *k, const char *s)
{
	uint64_t v;

	if (cli_bytes(k, s, &v))
		die2("%s", cli_error());
	return v;
}

static uint64_t parse_time(const char *k, const char *s)
{
	uint64_t v;

	if (cli_time(k, s, &v))
		die2("%s", cli_error());
	return v;
}

static uint64_t parse_rate(const char *k, const char *s)
{
	uint64_t v;

	if (cli_rate(k, s, &v))
		die2("%s", cli_error());
	return v;
}

static void parse_addr(const char *spec, const char *s, struct sockaddr_in *a)
{
	char host[64];
	const char *colon = strrchr(s, ':'), *p = colon ? colon + 1 : s;
	char *e;
	unsigned long port;

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	if (colon) {
		if ((size_t)(colon - s) >= sizeof(host))
			die2("--port: bad address in '%s'", spec);
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = 0;
	} else {
		strcpy(host, "127.0.0.1");
	}
	if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
		die2("--port: '%s' is not an IPv4 address (in '%s')", host, spec);
	errno = 0;
	port = strtoul(p, &e, 10);
	if (!*p || *e || errno || port == 0 || port > 65535)
		die2("--port: bad UDP port '%s' (in '%s')", p, spec);
	a->sin_port = htons((uint16_t)port);
}

/* LOCAL[=REMOTE]: bind LOCAL, send to REMOTE (QEMU's dgram local address);
 * without REMOTE, to where the first datagram came from */
static void add_port(const char *spec)
{
	struct port *p;
	char buf[96];
	char *eq;

	if (nports >= MAX_PORTS)
		die2("--port: at most %d ports", MAX_PORTS);
	if (strlen(spec) >= sizeof(buf))
		die2("--port: '%s' is too long", spec);
	p = &ports[nports++];
	strcpy(buf, spec);
	strcpy(p->spec, spec);
	eq = strchr(buf, '=');
	if (eq)
		*eq++ = 0;
	parse_addr(spec, buf, &p->local);
	if (eq) {
		parse_addr(spec, eq, &p->remote);
		p->have_remote = true;
	}
}

static const char usage[] =
"usage: qrnic-switch --port [HOST:]PORT[=[HOST:]PORT] (2 to " QS_STR(MAX_PORTS) " times) [options]\n"
"  The simulator's switch (docs/congestion.md) for QEMU -netdev dgram ports.\n"
"  --port L[=R]       a switch port: UDP socket bound on L, frames sent to R\n"
"                     (QEMU's local.port); without R, to the first sender\n"
"  --rate R           each output port's rate, e.g. 200M, 1G, inf   (200M)\n"
"  --overhead B       framing bytes per frame for the rate          (24)\n"
"  --latency T        switch to host latency, e.g. 10us             (0)\n"
"  --buffer B         per output queue, bytes (K, M = KiB, MiB)     (1M)\n"
"  --kmin, --kmax B   RED/ECN marking thresholds; --kmax 0: none     (40000, 160000)\n"
"  --pmax P           marking probability just below kmax          (0.2)\n"
"  --pfc              PFC: XOFF to a host whose ingress bytes pass --xoff\n"
"  --xoff, --xon B    PFC thresholds per ingress priority          (128000, 64000)\n"
"  --prio-queues      one queue per priority (strict priority); hosts' PFC honoured\n"
"  --pfc-prios LIST   with --pfc: the lossless priorities, e.g. 3,4; the others\n"
"                     drop at their queue's limit                 (all)\n"
"  --ets W0,...,W7    with --prio-queues: ETS (802.1Qaz) weights in percent per\n"
"                     priority, deficit round robin; 0 = strict priority, the\n"
"                     others add up to 100                        (none: strict)\n"
"  --shared-buffer B  every queue draws from one buffer of B bytes, dynamic\n"
"                     threshold alpha x free bytes (0: a buffer per port)   (0)\n"
"  --alpha A          the dynamic threshold's factor, (0, 1024]             (1)\n"
"  --pfc-resume B     shared buffer + PFC: XON this far below the threshold (3000)\n"
"  --seed N           marking draws                                 (1)\n"
"  --stats FILE       JSON counters, every --stats-interval and on SIGUSR1\n"
"  --stats-interval T (1s)\n"
"  --duration T       exit (printing the counters) after T; 0: run until SIGTERM (0)\n"
"  Counters are printed as JSON on stdout at SIGTERM/SIGINT; 'qrnic-switch: ready'\n"
"  goes to stderr once every port is bound.\n";

static bool has_arg(const char *k)
{
	static const char *const a[] = { "port", "rate", "overhead", "latency", "buffer", "kmin",
					 "kmax", "pmax", "xoff", "xon", "seed", "stats",
					 "stats-interval", "duration", "shared-buffer", "alpha",
					 "pfc-resume", "ets", "pfc-prios", NULL };

	for (int i = 0; a[i]; i++)
		if (!strcmp(a[i], k))
			return true;
	return false;
}

static void parse_args(int argc, char **argv)
{
	memset(&swc, 0, sizeof(swc));
	swc.rate_bps = 200000000ull;
	swc.overhead = 24;
	swc.buffer = 1ull << 20;
	swc.kmin = 40000;
	swc.kmax = 160000;
	swc.pmax = 0.2;
	swc.xoff = 128000;
	swc.xon = 64000;
	swc.seed = 1;
	swc.alpha = 1;
	swc.pfc_resume = 3000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		char k[32];
		const char *eq;
		size_t kl;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			exit(0);
		}
		if (strncmp(a, "--", 2))
			die2("unexpected argument '%s'", a);
		a += 2;
		eq = strchr(a, '=');
		kl = eq ? (size_t)(eq - a) : strlen(a);
		if (kl >= sizeof(k))
			die2("unknown option '--%s'", a);
		memcpy(k, a, kl);
		k[kl] = 0;
		if (has_arg(k)) {
			if (eq)
				v = eq + 1;
			else if (i + 1 < argc)
				v = argv[++i];
			else
				die2("--%s needs a value", k);
		} else if (eq) {
			die2("--%s takes no value", k);
		}
		if (!strcmp(k, "port")) {
			add_port(v);
		} else if (!strcmp(k, "rate")) {
			swc.rate_bps = parse_rate(k, v);
		} else if (!strcmp(k, "overhead")) {
			uint64_t o = parse_bytes(k, v);

			if (o > 1000)
				die2("--overhead: at most 1000 bytes");
			swc.overhead = (uint32_t)o;
		} else if (!strcmp(k, "latency")) {
			swc.latency_ns = parse_time(k, v);
		} else if (!strcmp(k, "buffer")) {
			swc.buffer = parse_bytes(k, v);
			if (swc.buffer < 2 * HX_SW_MAX_FRAME)
				die2("--buffer: at least %d bytes", 2 * HX_SW_MAX_FRAME);
		} else if (!strcmp(k, "kmin")) {
			swc.kmin = parse_bytes(k, v);
		} else if (!strcmp(k, "kmax")) {
			swc.kmax = parse_bytes(k, v);
		} else if (!strcmp(k, "pmax")) {
			char *e;

			swc.pmax = strtod(v, &e);
			if (e == v || *e || !(swc.pmax >= 0 && swc.pmax <= 1))
				die2("--pmax: '%s' is not a probability", v);
		} else if (!strcmp(k, "shared-buffer")) {
			swc.shared_buffer = parse_bytes(k, v);
			if (swc.shared_buffer && swc.shared_buffer < 2 * HX_SW_MAX_FRAME)
				die2("--shared-buffer: 0 or at least %d bytes", 2 * HX_SW_MAX_FRAME);
		} else if (!strcmp(k, "alpha")) {
			char *e;

			swc.alpha = strtod(v, &e);
			if (e == v || *e || !(swc.alpha > 0 && swc.alpha <= 1024))
				die2("--alpha: '%s' is not a factor in (0, 1024]", v);
		} else if (!strcmp(k, "pfc-resume")) {
			swc.pfc_resume = parse_bytes(k, v);
		} else if (!strcmp(k, "pfc")) {
			swc.pfc = 1;
		} else if (!strcmp(k, "prio-queues")) {
			swc.prio_queues = 1;
		} else if (!strcmp(k, "pfc-prios")) {
			uint8_t m;

			if (cli_prios(k, v, &m))
				die2("%s", cli_error());
			swc.pfc_lossy = (uint8_t)~m;
		} else if (!strcmp(k, "ets")) {
			if (cli_ets(k, v, swc.ets_weight))
				die2("%s", cli_error());
			swc.ets = 1;
		} else if (!strcmp(k, "xoff")) {
			swc.xoff = parse_bytes(k, v);
		} else if (!strcmp(k, "xon")) {
			swc.xon = parse_bytes(k, v);
		} else if (!strcmp(k, "seed")) {
			char *e;

			errno = 0;
			swc.seed = strtoull(v, &e, 0);
			if (!*v || *e || errno || *v == '-')
				die2("--seed: not a number: '%s'", v);
		} else if (!strcmp(k, "stats")) {
			if (!*v)
				die2("--stats: empty file name");
			stats_path = v;
		} else if (!strcmp(k, "stats-interval")) {
			stats_interval_ns = parse_time(k, v);
			if (stats_interval_ns < 1000000)
				die2("--stats-interval: at least 1ms");
		} else if (!strcmp(k, "duration")) {
			duration_ns = parse_time(k, v);
		} else {
			die2("unknown option '--%s'", k);
		}
	}
	if (nports < 2)
		die2("at least 2 --port (got %d)", nports);
	if (swc.kmax && swc.kmax <= swc.kmin)
		die2("--kmax (%llu) must be above --kmin (%llu), or 0 for no marking",
		     (unsigned long long)swc.kmax, (unsigned long long)swc.kmin);
	if (swc.pfc && swc.xon > swc.xoff)
		die2("--xon (%llu) must not be above --xoff (%llu)", (unsigned long long)swc.xon,
		     (unsigned long long)swc.xoff);
	if (swc.pfc_lossy && !swc.pfc)
		die2("--pfc-prios names the lossless priorities: it needs --pfc");
	if (swc.ets && !swc.prio_queues)
		die2("--ets weighs the priority queues: it needs --prio-queues");
	for (int i = 0; i < nports; i++)
		for (int j = 0; j < i; j++)
			if (ports[i].local.sin_port == ports[j].local.sin_port &&
			    ports[i].local.sin_addr.s_addr == ports[j].local.sin_addr.s_addr)
				die2("--port: '%s' and '%s' bind the same address", ports[j].spec,
				     ports[i].spec);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* the world's clock: host monotonic time since start (the world starts at 1000) */
static uint64_t world_target(void)
{
	return mono_ns() - t0_mono + 1000;
}

static void out_frame(void *opaque, int port, const uint8_t *f, uint32_t len)
{
	struct port *p = &ports[port];

	(void)opaque;
	if (!p->have_remote) {
		p->send_errors++;	/* nobody to send to yet */
		return;
	}
	if (sendto(p->fd, f, len, MSG_DONTWAIT, (const struct sockaddr *)&p->remote,
		   sizeof(p->remote)) != (ssize_t)len)
		p->send_errors++;
}

static void addr_str(const struct sockaddr_in *a, char *buf, size_t n)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
	snprintf(buf, n, "%s:%u", ip, ntohs(a->sin_port));
}

static void write_json(FILE *f)
{
	uint64_t now = hx_now(world), shared_max = 0, shared = hx_switch_shared_used(world, &shared_max);

	fprintf(f, "{\"uptime_ns\": %llu, \"shared_used\": %llu, \"shared_max\": %llu, \"config\": {\"rate_bps\": %llu, \"overhead\": %u, "
		"\"latency_ns\": %llu, \"buffer\": %llu, \"kmin\": %llu, \"kmax\": %llu, "
		"\"pmax\": %g, \"pfc\": %d, \"xoff\": %llu, \"xon\": %llu, \"prio_queues\": %d, "
		"\"shared_buffer\": %llu, \"alpha\": %g, \"ets\": [%d, %d, %d, %d, %d, %d, %d, %d], \"pfc_lossy\": %d},\n"
		" \"ports\": [",
		(unsigned long long)(now - 1000), (unsigned long long)shared, (unsigned long long)shared_max,
		(unsigned long long)swc.rate_bps, swc.overhead,
		(unsigned long long)swc.latency_ns, (unsigned long long)swc.buffer,
		(unsigned long long)swc.kmin, (unsigned long long)swc.kmax, swc.pmax, swc.pfc,
		(unsigned long long)swc.xoff, (unsigned long long)swc.xon, swc.prio_queues,
		(unsigned long long)swc.shared_buffer, swc.alpha, swc.ets_weight[0], swc.ets_weight[1],
		swc.ets_weight[2], swc.ets_weight[3], swc.ets_weight[4], swc.ets_weight[5],
		swc.ets_weight[6], swc.ets_weight[7], swc.pfc_lossy);
	for (int i = 0; i < nports; i++) {
		struct hx_switch_stats st;
		struct hx_switch_ext_stats es;
		char la[32], ra[32] = "";
		bool first = true;

		hx_switch_stats(world, i, &st);
		hx_switch_ext_stats(world, i, &es);
		addr_str(&ports[i].local, la, sizeof(la));
		if (ports[i].have_remote)
			addr_str(&ports[i].remote, ra, sizeof(ra));
		fprintf(f, "%s\n  {\"port\": %d, \"local\": \"%s\", \"remote\": \"%s\", "
			"\"rx_frames\": %llu, \"rx_bytes\": %llu, \"tx_frames\": %llu, "
			"\"malformed\": %llu, \"flooded\": %llu, \"filtered\": %llu, "
			"\"link_local\": %llu, \"send_errors\": %llu, "
			"\"frames\": %llu, \"bytes\": %llu, \"marks\": %llu, \"drops\": %llu, "
			"\"q_now\": %llu, \"q_max\": %llu, \"q_avg\": %.1f, \"pauses\": %llu, "
			"\"paused_ns\": %llu, \"pfc_sent\": %llu, \"pfc_rx\": %llu, \"queues\": [",
			i ? "," : "", i, la, ra,
			(unsigned long long)es.rx_frames, (unsigned long long)es.rx_bytes,
			(unsigned long long)es.tx_frames, (unsigned long long)es.malformed,
			(unsigned long long)es.flooded, (unsigned long long)es.filtered,
			(unsigned long long)es.link_local, (unsigned long long)ports[i].send_errors,
			(unsigned long long)st.frames, (unsigned long long)st.bytes,
			(unsigned long long)st.marks, (unsigned long long)st.drops,
			(unsigned long long)st.q_now, (unsigned long long)st.q_max, st.q_avg,
			(unsigned long long)st.pauses, (unsigned long long)st.paused_ns,
			(unsigned long long)st.pfc_frames, (unsigned long long)st.pfc_rx);
		for (int pr = 0; pr < 8; pr++) {
			struct hx_switch_queue_stats q;

			hx_switch_queue_stats(world, i, pr, &q);
			if (!q.frames && !q.drops)
				continue;
			fprintf(f, "%s{\"prio\": %d, \"frames\": %llu, \"bytes\": %llu, \"drops\": %llu, "
				"\"marks\": %llu, \"q_max\": %llu, \"paused_ns\": %llu, "
				"\"tx_frames\": %llu, \"tx_bytes\": %llu, \"weight\": %d}",
				first ? "" : ", ", pr, (unsigned long long)q.frames,
				(unsigned long long)q.bytes, (unsigned long long)q.drops,
				(unsigned long long)q.marks, (unsigned long long)q.q_max,
				(unsigned long long)q.paused_ns, (unsigned long long)q.tx_frames,
				(unsigned long long)q.tx_bytes, swc.ets ? swc.ets_weight[pr] : -1);
			first = false;
		}
		fputs("]}", f);
	}
	fputs("\n ]}\n", f);
}

static void write_stats_file(void)
{
	char tmp[4200];
	FILE *f;

	if (!stats_path)
		return;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", stats_path) >= (int)sizeof(tmp))
		return;
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "qrnic-switch: %s: %s\n", tmp, strerror(errno));
		return;
	}
	write_json(f);
	if (fclose(f) == 0)
		rename(tmp, stats_path);
}

static void on_signal(int s)
{
	if (s == SIGUSR1)
		sig_dump = 1;
	else
		sig_stop = 1;
}

static void open_ports(void)
{
	for (int i = 0; i < nports; i++) {
		struct port *p = &ports[i];
		int sz = 8 << 20;

		p->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (p->fd < 0) {
			fprintf(stderr, "qrnic-switch: socket: %s\n", strerror(errno));
			exit(1);
		}
		/* a guest's burst (a QP's window) must not overflow it: as
		 * the VM runner's links, forced past rmem_max when allowed */
		if (setsockopt(p->fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz)))
			setsockopt(p->fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
		setsockopt(p->fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		if (bind(p->fd, (struct sockaddr *)&p->local, sizeof(p->local))) {
			fprintf(stderr, "qrnic-switch: --port %s: bind: %s\n", p->spec, strerror(errno));
			exit(1);
		}
	}
}

int main(int argc, char **argv)
{
	static uint8_t buf[65536];
	struct pollfd pfd[MAX_PORTS];
	struct sigaction sa;
	sigset_t block, orig;
	uint64_t next_stats;

	parse_args(argc, argv);
	world = hx_world_new(1 << 20, swc.seed);
	if (!world) {
		fprintf(stderr, "qrnic-switch: out of memory\n");
		return 1;
	}
	for (int i = 0; i < nports; i++) {
		char kv[64];

		/* the devices only stand for ports: never brought up, no frames */
		snprintf(kv, sizeof(kv), "mac=02:5c:ff:00:00:%02x", i);
		if (hx_dev_add(world, kv) != i) {
			fprintf(stderr, "qrnic-switch: port %d: %s\n", i, hx_world_error(world));
			return 1;
		}
	}
	hx_wire_set_latency(world, 0);
	if (hx_switch_attach(world, &swc) || hx_switch_ext(world, out_frame, NULL)) {
		fprintf(stderr, "qrnic-switch: %s\n", hx_world_error(world));
		return 2;
	}
	open_ports();

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* signals are taken only inside ppoll (no lost wake-up) */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGUSR1);
	sigprocmask(SIG_BLOCK, &block, &orig);

	for (int i = 0; i < nports; i++) {
		pfd[i].fd = ports[i].fd;
		pfd[i].events = POLLIN;
	}
	t0_mono = mono_ns();
	next_stats = 1000 + stats_interval_ns;
	fprintf(stderr, "qrnic-switch: ready, %d ports, rate %llu b/s\n", nports,
		(unsigned long long)swc.rate_bps);
	fflush(stderr);
	write_stats_file();

	while (!sig_stop) {
		uint64_t now = world_target(), next, wait;
		struct timespec ts;

		/* the switch catches up with the host's clock: frames whose
		 * serialization ended by now leave (out_frame) */
		if (now > hx_now(world))
			hx_advance(world, now - hx_now(world));
		if (duration_ns && hx_now(world) - 1000 >= duration_ns)
			break;
		if (sig_dump || hx_now(world) >= next_stats) {
			sig_dump = 0;
			write_stats_file();
			next_stats = hx_now(world) + stats_interval_ns;
		}
		next = hx_next_event(world);
		if (next > next_stats)
			next = next_stats;
		if (duration_ns && next > duration_ns + 1000)
			next = duration_ns + 1000;
		wait = next > hx_now(world) ? next - hx_now(world) : 0;
		ts.tv_sec = (time_t)(wait / 1000000000ull);
		ts.tv_nsec = (long)(wait % 1000000000ull);
		if (ppoll(pfd, (nfds_t)nports, &ts, &orig) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "qrnic-switch: ppoll: %s\n", strerror(errno));
			break;
		}
		now = world_target();
		if (now > hx_now(world))
			hx_advance(world, now - hx_now(world));
		/* bounded: at most RX_BATCH datagrams per port, then the queues */
		for (int i = 0; i < nports; i++) {
			struct port *p = &ports[i];

			if (!(pfd[i].revents & POLLIN))
				continue;
			for (int n = 0; n < RX_BATCH; n++) {
				struct sockaddr_in from;
				socklen_t fl = sizeof(from);
				ssize_t r = recvfrom(p->fd, buf, sizeof(buf), MSG_TRUNC, (struct sockaddr *)&from,
						     &fl);

				if (r < 0)
					break;
				if (!p->have_remote && fl == sizeof(from) && from.sin_family == AF_INET) {
					p->remote = from;
					p->have_remote = true;
				}
				if (r < 14 || r > HX_SW_MAX_FRAME) {
					hx_switch_ext_malformed(world, i);
					continue;
				}
				hx_switch_port_rx(world, i, buf, (uint32_t)r);
			}
		}
		hx_run(world, 0, 0);	/* this instant: the frames join their queues */
	}
	write_stats_file();
	write_json(stdout);
	fflush(stdout);
	hx_world_free(world);
	return 0;
}
