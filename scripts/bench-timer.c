/* The bare timer `scripts/bench-reaction` measures the guard against: one thread that
 * wakes every INTERVAL_MS on an absolute CLOCK_MONOTONIC schedule (as the guard's sampler
 * schedules its checks) and does nothing else, for SECONDS. Its time on CPU per wake-up is
 * the floor a check of the guard costs before it reads anything.
 *
 * With FILE it also reads FILE at every wake-up (opened once, read again from offset 0, as
 * the guard keeps its files): with /proc/meminfo, what a check that reads free memory and
 * swap as text costs. With the word `sysinfo` it calls sysinfo(2) at every wake-up instead:
 * free RAM, total and free swap in one system call, the least a check that looks at free
 * memory and swap can do (Linux).
 *
 * Built by the script: cc -O2 -o bench-timer scripts/bench-timer.c
 * Usage: bench-timer INTERVAL_MS SECONDS [FILE|sysinfo] */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: bench-timer INTERVAL_MS SECONDS [FILE]\n");
        return 2;
    }
    long interval_ms = strtol(argv[1], NULL, 10);
    long seconds = strtol(argv[2], NULL, 10);
    if (interval_ms <= 0 || seconds <= 0) {
        fprintf(stderr, "bench-timer: INTERVAL_MS and SECONDS must be positive\n");
        return 2;
    }
    int file = -1;
    int use_sysinfo = argc == 4 && strcmp(argv[3], "sysinfo") == 0;
    if (argc == 4 && !use_sysinfo) {
        file = open(argv[3], O_RDONLY | O_CLOEXEC);
        if (file < 0) {
            perror(argv[3]);
            return 2;
        }
    }
    static char buf[16384];
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    long wakes = seconds * 1000 / interval_ms;
    for (long n = 0; n < wakes; n++) {
        next.tv_nsec += interval_ms * 1000000L;
        while (next.tv_nsec >= 1000000000L) {
            next.tv_nsec -= 1000000000L;
            next.tv_sec += 1;
        }
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR) {
        }
        struct sysinfo info;
        if (use_sysinfo && sysinfo(&info) != 0) {
            perror("sysinfo");
            return 1;
        }
        if (file >= 0 && pread(file, buf, sizeof buf, 0) < 0) {
            perror(argv[3]);
            return 1;
        }
    }
    return 0;
}
