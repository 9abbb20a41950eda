// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * qrnic_gprof: where a guest's CPUs spend their time, by kernel module and
 * symbol, for bench/nvmeof_vs_rxe --guest-profile (docs/storage.md).
 *
 *   qrnic_gprof SECONDS [PERIOD_US]
 *
 * Samples every online CPU with the kernel's cpu-clock software event
 * (perf_event_open: instruction pointer, time, kernel call chain) every
 * PERIOD_US (default 1000) for SECONDS, then prints one JSON object: the
 * time (us) in user space, in the idle loop, and in the kernel by owning
 * module and by symbol (the 40 largest), from /proc/kallsyms.
 *
 * Two corrections for how a TCG guest gets sampled.  The cpu-clock event is
 * a timer interrupt, not an NMI (a TCG guest has no PMU): a tick that falls
 * while interrupts are off is taken where they come back on, e.g. in
 * _raw_spin_unlock_irqrestore, and ticks missed meanwhile are merged into
 * one.  So (1) each sample weighs the time since the previous one on its
 * CPU, not one period, and (2) a kernel sample belongs to the innermost
 * module on its call chain ("vmlinux" only when no module is on it): a
 * driver's time under a spinlock taken with interrupts off lands in the
 * unlock, which its own function called.  What stays ambiguous is a tick
 * taken where interrupts come back on after a hard interrupt (irq exit,
 * softirq entry: the interrupted code is on the chain, not the handler);
 * the kernel samples taken at such sites with no module on the chain are
 * counted apart ("irq_sites_us") so that a bound can give them to either
 * side; so is the part of the idle time that came from ticks taken more
 * than 1.5 periods late ("idle_late_us": interrupts off until the idle
 * loop's halt, or the halted vCPU's host thread waiting for a CPU), and
 * where the idle ticks were taken ("idle_symbols_us").
 *
 * The guest image has no perf (docs/storage.md): this is the few lines of
 * it that the question needs, built on the host (tests/guest/vmlib.py
 * host_verbs_program) like the other guest programs.  Under TCG the guest's
 * clock is the host's, so a sample lands on the guest instruction that was
 * executing -- or whose emulation (an MMIO exit into the device) was
 * running -- when the interval ended: a driver's share includes the cost of
 * the device accesses it makes.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_CPUS	64
#define RING_PAGES	64		/* data pages per CPU, a power of 2 */
#define MAX_TOP		40		/* symbols printed */

struct ksym {
	uint64_t addr;
	char name[96];
	char mod[48];
};

static struct ksym *syms;
static size_t nsyms;

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void copy_trunc(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

static int load_kallsyms(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512];
	size_t cap = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		uint64_t addr;
		char type, name[256], mod[256] = "vmlinux";
		int n = sscanf(line, "%" SCNx64 " %c %255s [%255[^]]]", &addr, &type, name, mod);

		if (n < 3 || !addr || (type != 't' && type != 'T'))
			continue;
		if (nsyms == cap) {
			cap = cap ? 2 * cap : 65536;
			syms = realloc(syms, cap * sizeof(*syms));
			if (!syms) {
				fclose(f);
				return -1;
			}
		}
		syms[nsyms].addr = addr;
		copy_trunc(syms[nsyms].name, sizeof(syms[nsyms].name), name);
		copy_trunc(syms[nsyms].mod, sizeof(syms[nsyms].mod), mod);
		nsyms++;
	}
	fclose(f);
	qsort(syms, nsyms, sizeof(*syms), cmp_ksym);
	return nsyms ? 0 : -1;
}

static const struct ksym *ksym_of(uint64_t ip)
{
	size_t lo = 0, hi = nsyms;

	if (!nsyms || ip < syms[0].addr)
		return NULL;
	while (hi - lo > 1) {	/* the last symbol at or below ip */
		size_t mid = lo + (hi - lo) / 2;

		if (syms[mid].addr <= ip)
			lo = mid;
		else
			hi = mid;
	}
	return &syms[lo];
}

struct count {
	const char *key;
	uint64_t n;
};

static void bump(struct count *c, size_t *nc, size_t cap, const char *key, uint64_t n)
{
	for (size_t i = 0; i < *nc; i++)
		if (!strcmp(c[i].key, key)) {
			c[i].n += n;
			return;
		}
	if (*nc < cap)
		c[(*nc)++] = (struct count){ key, n };
}

static int cmp_count(const void *a, const void *b)
{
	const struct count *x = a, *y = b;

	return x->n < y->n ? 1 : x->n > y->n ? -1 : 0;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s >= 0x20)
			putchar(*s);
	putchar('"');
}

static bool idle_symbol(const char *name)
{
	return strstr(name, "idle") || strstr(name, "safe_halt") || strstr(name, "native_halt") ||
	       !strcmp(name, "mwait_idle_with_hints");
}

/* where a tick deferred by a hard interrupt's handler is taken */
static bool irq_site(const char *name)
{
	static const char *const sites[] = {
		"handle_softirqs", "__do_softirq", "irq_exit_rcu", "__irq_exit_rcu", "irq_exit",
		"finish_task_switch", "finish_task_switch.isra.0", "do_softirq", "__local_bh_enable_ip",
		"common_interrupt", "asm_common_interrupt", "sysvec_apic_timer_interrupt",
		"asm_sysvec_apic_timer_interrupt", "sysvec_call_function_single",
	};

	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++)
		if (!strcmp(name, sites[i]))
			return true;
	return false;
}

#define MAX_CHAIN	128

struct acc {
	uint64_t user_ns, idle_ns, kernel_ns, irq_sites_ns, unknown_ns, samples, lost;
	uint64_t idle_late_ns;	/* idle samples' time beyond one period: a tick taken late */
	uint64_t period_ns;
	uint64_t *leaf_ns;	/* per kallsyms entry: the sampled function */
	uint64_t *owner_ns;	/* per kallsyms entry: the innermost module function on the chain */
	uint64_t *idle_sym_ns;	/* per kallsyms entry: where the idle samples were */
};

/* One PERF_RECORD_SAMPLE's body (ip, time, callchain), weighed by dt. */
static void account(struct acc *a, const uint64_t *w, size_t nw, uint16_t misc, uint64_t dt)
{
	uint64_t ip, nr;
	const struct ksym *leaf, *owner = NULL;

	if (nw < 3)
		return;
	ip = w[0];
	nr = w[2];
	if (nr > nw - 3)
		nr = nw - 3;
	a->samples++;
	if ((misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_USER) {
		a->user_ns += dt;
		return;
	}
	leaf = ksym_of(ip);
	if (!leaf) {
		a->unknown_ns += dt;
		return;
	}
	if (idle_symbol(leaf->name) && !strcmp(leaf->mod, "vmlinux")) {
		a->idle_ns += dt;
		a->idle_sym_ns[leaf - syms] += dt;
		if (dt > a->period_ns + a->period_ns / 2)
			a->idle_late_ns += dt - a->period_ns;
		return;
	}
	a->kernel_ns += dt;
	a->leaf_ns[leaf - syms] += dt;
	for (uint64_t k = 0; k < nr; k++) {	/* innermost first */
		uint64_t f = w[3 + k];
		const struct ksym *s;

		if (f >= (uint64_t)PERF_CONTEXT_MAX) {
			if (f == (uint64_t)PERF_CONTEXT_USER)
				break;
			continue;
		}
		s = ksym_of(f);
		if (s && strcmp(s->mod, "vmlinux")) {
			owner = s;
			break;
		}
	}
	if (!owner && strcmp(leaf->mod, "vmlinux"))
		owner = leaf;
	if (owner)
		a->owner_ns[owner - syms] += dt;
	else if (irq_site(leaf->name))
		a->irq_sites_ns += dt;
}

static void print_top(const char *key, const uint64_t *ns)
{
	struct count top[MAX_TOP];
	size_t n = 0;

	for (size_t k = 0; k < nsyms; k++) {
		if (!ns[k])
			continue;
		if (n < MAX_TOP) {
			top[n++] = (struct count){ syms[k].name, ns[k] };
		} else {	/* keep the MAX_TOP largest: replace the smallest kept */
			size_t m = 0;

			for (size_t j = 1; j < n; j++)
				if (top[j].n < top[m].n)
					m = j;
			if (top[m].n < ns[k])
				top[m] = (struct count){ syms[k].name, ns[k] };
		}
	}
	qsort(top, n, sizeof(*top), cmp_count);
	printf(", \"%s\": [", key);
	for (size_t i = 0; i < n; i++) {
		printf(i ? ", [" : "[");
		json_str(top[i].key);
		printf(", %.1f]", (double)top[i].n / 1e3);
	}
	printf("]");
}

int main(int argc, char **argv)
{
	struct perf_event_attr attr;
	struct {
		int fd;
		void *ring;
		uint64_t tail, last_t;
	} cpu[MAX_CPUS];
	size_t page = (size_t)sysconf(_SC_PAGESIZE), ring_len = (RING_PAGES + 1) * page;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double seconds = argc > 1 ? atof(argv[1]) : 0;
	long period_us = argc > 2 ? atol(argv[2]) : 1000;
	uint64_t nopen = 0, rec[3 + MAX_CHAIN];
	struct acc a = { 0 };
	struct timespec t0, t;

	if (argc < 2 || argc > 3 || !(seconds > 0 && seconds <= 3600) || period_us < 10 || period_us > 1000000) {
		fprintf(stderr, "usage: qrnic_gprof SECONDS(0-3600] [PERIOD_US 10..1000000]\n");
		return 2;
	}
	if (load_kallsyms()) {
		fprintf(stderr, "qrnic_gprof: no kernel text symbols in /proc/kallsyms (root? kptr_restrict?)\n");
		return 1;
	}
	a.leaf_ns = calloc(nsyms, sizeof(*a.leaf_ns));
	a.owner_ns = calloc(nsyms, sizeof(*a.owner_ns));
	a.idle_sym_ns = calloc(nsyms, sizeof(*a.idle_sym_ns));
	if (!a.leaf_ns || !a.owner_ns || !a.idle_sym_ns)
		return 1;
	if (ncpu > MAX_CPUS)
		ncpu = MAX_CPUS;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = (uint64_t)period_us * 1000;
	a.period_ns = attr.sample_period;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
	attr.exclude_callchain_user = 1;
	attr.sample_max_stack = 120;	/* under the sysctl perf_event_max_stack default (127); the
					 * context markers count as entries, MAX_CHAIN leaves room */
	attr.disabled = 1;
	attr.wakeup_events = 1;
	for (long c = 0; c < ncpu; c++) {
		cpu[c].fd = (int)syscall(SYS_perf_event_open, &attr, -1, (int)c, -1, 0);
		cpu[c].ring = MAP_FAILED;
		cpu[c].tail = 0;
		cpu[c].last_t = 0;
		if (cpu[c].fd < 0)
			continue;
		cpu[c].ring = mmap(NULL, ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, cpu[c].fd, 0);
		if (cpu[c].ring == MAP_FAILED) {
			close(cpu[c].fd);
			cpu[c].fd = -1;
			continue;
		}
		nopen++;
	}
	if (!nopen) {
		fprintf(stderr, "qrnic_gprof: perf_event_open: %s\n", strerror(errno));
		return 1;
	}
	for (long c = 0; c < ncpu; c++)
		if (cpu[c].fd >= 0)
			ioctl(cpu[c].fd, PERF_EVENT_IOC_ENABLE, 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		bool done;

		usleep(20000);	/* a ring holds 64 pages: at most ~20 ms of 1 kHz samples with long chains */
		clock_gettime(CLOCK_MONOTONIC, &t);
		done = (double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds;
		if (done)
			for (long c = 0; c < ncpu; c++)
				if (cpu[c].fd >= 0)
					ioctl(cpu[c].fd, PERF_EVENT_IOC_DISABLE, 0);
		for (long c = 0; c < ncpu; c++) {
			struct perf_event_mmap_page *meta = cpu[c].ring;
			const uint8_t *data;
			uint64_t head, size;

			if (cpu[c].fd < 0)
				continue;
			data = (const uint8_t *)cpu[c].ring + page;
			size = RING_PAGES * page;
			head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
			while (cpu[c].tail + sizeof(struct perf_event_header) <= head) {
				struct perf_event_header h;
				uint64_t off = cpu[c].tail % size;
				size_t body;

				/* a record may wrap around the end of the ring */
				for (size_t k = 0; k < sizeof(h); k++)
					((uint8_t *)&h)[k] = data[(off + k) % size];
				if (h.size < sizeof(h) || cpu[c].tail + h.size > head)
					break;
				body = h.size - sizeof(h);
				if (h.type == PERF_RECORD_SAMPLE && body >= 24 && body <= sizeof(rec)) {
					uint64_t dt;

					for (size_t k = 0; k < body; k++)
						((uint8_t *)rec)[k] = data[(off + sizeof(h) + k) % size];
					/* the time since this CPU's previous sample (the
					 * first: one period), at most 100 periods */
					dt = cpu[c].last_t && rec[1] > cpu[c].last_t ? rec[1] - cpu[c].last_t
										       : attr.sample_period;
					if (dt > 100 * attr.sample_period)
						dt = 100 * attr.sample_period;
					cpu[c].last_t = rec[1];
					account(&a, rec, body / 8, h.misc, dt);
				} else if (h.type == PERF_RECORD_LOST) {
					a.lost++;
				}
				cpu[c].tail += h.size;
			}
			__atomic_store_n(&meta->data_tail, cpu[c].tail, __ATOMIC_RELEASE);
		}
		if (done)
			break;
	}

	/* the kernel time by owning module, over the symbols that own some */
	static struct count mods[512];
	size_t nmods = 0;
	uint64_t vmlinux_ns = a.kernel_ns;

	for (size_t k = 0; k < nsyms; k++)
		if (a.owner_ns[k]) {
			bump(mods, &nmods, 512, syms[k].mod, a.owner_ns[k]);
			vmlinux_ns -= a.owner_ns[k];
		}
	qsort(mods, nmods, sizeof(*mods), cmp_count);
	printf("{\"cpus\": %" PRIu64 ", \"period_us\": %ld, \"samples\": %" PRIu64 ", \"lost_records\": %" PRIu64
	       ", \"user_us\": %.1f, \"idle_us\": %.1f, \"idle_late_us\": %.1f, \"unknown_us\": %.1f"
	       ", \"kernel_us\": %.1f, \"irq_sites_us\": %.1f, \"modules_us\": {\"vmlinux\": %.1f",
	       nopen, period_us, a.samples, a.lost, (double)a.user_ns / 1e3, (double)a.idle_ns / 1e3,
	       (double)a.idle_late_ns / 1e3,
	       (double)a.unknown_ns / 1e3, (double)a.kernel_ns / 1e3, (double)a.irq_sites_ns / 1e3,
	       (double)vmlinux_ns / 1e3);
	for (size_t i = 0; i < nmods; i++) {
		printf(", ");
		json_str(mods[i].key);
		printf(": %.1f", (double)mods[i].n / 1e3);
	}
	printf("}");
	print_top("symbols_us", a.leaf_ns);
	print_top("owners_us", a.owner_ns);
	print_top("idle_symbols_us", a.idle_sym_ns);
	printf("}\n");
	return 0;
}
