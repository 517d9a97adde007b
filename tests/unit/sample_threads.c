/* tests/unit/sample_threads.c — XSPROF_SAMPLE_HZ in a program without MPI
 * (check_sample_threads.py): the main thread and a thread started later
 * burn CPU in functions of their own; nothing is sampled while the session
 * is stopped; the program exits with a thread still computing, so the
 * exit path (atexit -> finalize) stops the sampler under load. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <xsprof/xsprof.h>

static volatile double g_sink;

/* CPU time of the calling thread, s */
static double cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* each with its own constant: identical bodies would be folded into one */
#define BURN(name, k)                                       \
    __attribute__((noinline)) static void name(double s) {  \
        double t0 = cpu_s(), x = 1.0;                       \
        while (cpu_s() - t0 < s)                            \
            for (int i = 0; i < 20000; i++)                 \
                x = x * (1.0000001 + (k) * 1e-9) + 1e-9;    \
        g_sink += x;                                        \
    }
BURN(burn_main, 1)
BURN(burn_stopped, 2)
BURN(burn_thread, 3)
BURN(burn_forever_step, 4)

static void *thread_main(void *arg) {
    (void)arg;
    burn_thread(0.25);
    return NULL;
}

static void *forever(void *arg) {
    (void)arg;
    for (;;)
        burn_forever_step(0.01);
    return NULL;
}

int main(void) {
    xsprof_region_begin("run"); /* the journal, and sampling, start here */
    pthread_t a, b;
    pthread_create(&a, NULL, thread_main, NULL);
    burn_main(0.25);
    pthread_join(a, NULL);
    xsprof_session_stop();
    burn_stopped(0.2);
    xsprof_session_start();
    pthread_create(&b, NULL, forever, NULL);
    burn_main(0.1);
    printf("done\n");
    exit(0); /* b still runs; "run" never ends */
}
