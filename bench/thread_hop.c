/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/thread_hop: what one hand-over of work between two threads costs on
 * this host, the way QEMU hands work from one thread to another (issue 23,
 * docs/qemu.md "Why the device has no IOThread").
 *
 * A thread that gives work to another writes that thread's eventfd (QEMU's
 * EventNotifier: aio_notify, qemu_bh_schedule from another thread); the
 * other sleeps in ppoll() on it (the main loop's and an IOThread's wait),
 * wakes, reads it and does the work.  Two threads pass a token back and
 * forth that way; a hop is half a round trip.  Optionally SPINNERS threads
 * spin meanwhile, as TCG vCPUs do while a guest polls a completion queue,
 * so that the woken thread may first have to wait for a CPU.
 *
 *     thread_hop [--hops N] [--spinners 0,1,2] [--pin]
 *
 * Prints, per spinner count, the hop's wall time (median, 90th percentile)
 * and the CPU time both threads spent per hop (getrusage RUSAGE_THREAD),
 * with the host's CPU count and load.  Figures only: nothing is asserted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define MAX_SPINNERS 8
#define MAX_HOPS     1000000

struct side {
    int efd;                    /* this thread's eventfd: written to wake it */
    double cpu_s;               /* its CPU seconds over the run */
};

static struct side sides[2];
static long n_rounds;
static uint64_t *rtt_ns;        /* per round trip, measured by side 0 */
static atomic_bool spin_stop;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double thread_cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void die(const char *what)
{
    fprintf(stderr, "thread_hop: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Sleep in ppoll until the eventfd is written, then consume it. */
static void wait_token(int efd)
{
    struct pollfd pfd = { .fd = efd, .events = POLLIN };
    uint64_t v;

    for (;;) {
        int r = ppoll(&pfd, 1, NULL, NULL);

        if (r < 0 && errno != EINTR) {
            die("ppoll");
        }
        if (r > 0 && read(efd, &v, sizeof(v)) == sizeof(v)) {
            return;
        }
        if (r > 0 && errno != EAGAIN) {
            die("read");
        }
    }
}

static void give_token(int efd)
{
    uint64_t one = 1;

    if (write(efd, &one, sizeof(one)) != sizeof(one)) {
        die("write");
    }
}

static void *echo_main(void *arg)
{
    double c0 = thread_cpu_s();

    (void)arg;
    for (long i = 0; i < n_rounds; i++) {
        wait_token(sides[1].efd);
        give_token(sides[0].efd);
    }
    sides[1].cpu_s = thread_cpu_s() - c0;
    return NULL;
}

static void *spin_main(void *arg)
{
    volatile uint64_t n = 0;

    (void)arg;
    while (!atomic_load_explicit(&spin_stop, memory_order_relaxed)) {
        n++;
    }
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static void pin_to(pthread_t t, int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(t, sizeof(set), &set);
}

static void run(int spinners, bool pin, long ncpu)
{
    pthread_t echo, spin[MAX_SPINNERS];
    double c0, cpu0;
    uint64_t t_all;

    atomic_store(&spin_stop, false);
    for (int i = 0; i < spinners; i++) {
        if (pthread_create(&spin[i], NULL, spin_main, NULL)) {
            die("pthread_create");
        }
        if (pin) {
            pin_to(spin[i], (int)(i % ncpu));
        }
    }
    if (pthread_create(&echo, NULL, echo_main, NULL)) {
        die("pthread_create");
    }
    if (pin && ncpu > 1) {
        pin_to(echo, 1);
        pin_to(pthread_self(), 0);
    }
    c0 = thread_cpu_s();
    t_all = now_ns();
    for (long i = 0; i < n_rounds; i++) {
        uint64_t t = now_ns();

        give_token(sides[1].efd);
        wait_token(sides[0].efd);
        rtt_ns[i] = now_ns() - t;
    }
    t_all = now_ns() - t_all;
    cpu0 = thread_cpu_s() - c0;
    pthread_join(echo, NULL);
    atomic_store(&spin_stop, true);
    for (int i = 0; i < spinners; i++) {
        pthread_join(spin[i], NULL);
    }
    if (pin) {
        cpu_set_t all;

        CPU_ZERO(&all);
        for (long c = 0; c < ncpu && c < CPU_SETSIZE; c++) {
            CPU_SET((int)c, &all);
        }
        pthread_setaffinity_np(pthread_self(), sizeof(all), &all);
    }

    qsort(rtt_ns, (size_t)n_rounds, sizeof(rtt_ns[0]), cmp_u64);
    /* a hop is half a round trip; CPU: both threads' time over both hops */
    printf("spinners %d: hop p50 %.1f us, p90 %.1f us, mean %.1f us; CPU per hop %.1f us "
           "(both threads); %ld hops\n",
           spinners, rtt_ns[n_rounds / 2] / 2e3, rtt_ns[n_rounds * 9 / 10] / 2e3,
           t_all / 2e3 / n_rounds, (cpu0 + sides[1].cpu_s) * 1e6 / (2.0 * n_rounds),
           2 * n_rounds);
    fflush(stdout);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: thread_hop [--hops N] [--spinners 0,1,2] [--pin]\n"
               "  --hops N        hand-overs per measurement, 2..%d (default 20000)\n"
               "  --spinners L    comma-separated counts of spinning threads, each 0..%d\n"
               "  --pin           the two threads on CPUs 0 and 1, spinner i on CPU i %% ncpu\n",
            MAX_HOPS, MAX_SPINNERS);
}

static bool parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

int main(int argc, char **argv)
{
    long hops = 20000, ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int counts[16], n_counts = 0;
    const char *list = "0,1,2";
    bool pin = false;
    double load[3] = { 0 };
    char buf[64], *tok, *save;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--hops") && i + 1 < argc) {
            if (!parse_long(argv[++i], 2, MAX_HOPS, &hops)) {
                fprintf(stderr, "thread_hop: --hops %s: not a number in 2..%d\n", argv[i],
                        MAX_HOPS);
                return 2;
            }
        } else if (!strcmp(argv[i], "--spinners") && i + 1 < argc) {
            list = argv[++i];
        } else if (!strcmp(argv[i], "--pin")) {
            pin = true;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "thread_hop: unknown or incomplete argument %s\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (strlen(list) >= sizeof(buf)) {
        fprintf(stderr, "thread_hop: --spinners %s: too long\n", list);
        return 2;
    }
    strcpy(buf, list);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        long v;

        if (n_counts == (int)(sizeof(counts) / sizeof(counts[0])) ||
            !parse_long(tok, 0, MAX_SPINNERS, &v)) {
            fprintf(stderr, "thread_hop: --spinners %s: at most 16 counts, each 0..%d\n",
                    list, MAX_SPINNERS);
            return 2;
        }
        counts[n_counts++] = (int)v;
    }
    if (!n_counts) {
        fprintf(stderr, "thread_hop: --spinners: no count given\n");
        return 2;
    }

    n_rounds = hops / 2;
    rtt_ns = calloc((size_t)n_rounds, sizeof(*rtt_ns));
    if (!rtt_ns) {
        die("calloc");
    }
    for (int i = 0; i < 2; i++) {
        sides[i].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (sides[i].efd < 0) {
            die("eventfd");
        }
    }
    if (getloadavg(load, 3) < 0) {
        load[0] = -1;
    }
    printf("thread_hop: %ld CPUs, load %.2f, eventfd + ppoll between two threads%s\n", ncpu,
           load[0], pin ? ", pinned" : "");
    for (int i = 0; i < n_counts; i++) {
        run(counts[i], pin, ncpu);
    }
    free(rtt_ns);
    return 0;
}
