/* The log handler and region thresholds (core/log.c, core/threshold.c):
 * argument checks; 4 threads ending 300 regions each above a threshold
 * count every instance exactly once over the rate-limited messages and the
 * finalize report, with messages of one name at least a second apart; no
 * message for a name without a threshold or below it; a handler that
 * records a region of its own (recorded) and tries to replace itself
 * (refused); once replaced, a handler is never called again. Durations are
 * lower bounds only: each region spins until it has lasted 2 us. */
#include <math.h>
#include <pthread.h>
#include <xsprof/xsprof.h>
#include "memsink.h"

#define THREADS 4
#define PER_THREAD 300

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_msgs[4096];
static int g_nmsgs;
static int g_calls;
static xsprof_status g_set_inside = XSPROF_OK;

static void handler(xsprof_log_level level, int rank, const char *text, void *user) {
    CHECK(user == &g_lock && rank == 0 && level >= XSPROF_LOG_ERROR && level <= XSPROF_LOG_DEBUG);
    xsprof_region_begin("in_handler");
    pthread_mutex_lock(&g_lock);
    g_calls++;
    if (g_nmsgs < 4096)
        g_msgs[g_nmsgs++] = strdup(text);
    pthread_mutex_unlock(&g_lock);
    xsprof_status st = xsprof_log_handler_set(NULL, NULL);
    __atomic_store_n(&g_set_inside, st, __ATOMIC_RELAXED);
    xsprof_region_end();
}

static void spin_region(xsprof_name_id id) {
    xsprof_region_begin_id(id);
    int64_t t0 = xsprof_clock_now();
    while (xsprof_clock_now() - t0 < 2000)
        ;
    xsprof_region_end();
}

static void *worker(void *arg) {
    xsprof_name_id hot, cold;
    CHECK(xsprof_name_intern("hot", &hot) == XSPROF_OK && xsprof_name_intern("cold", &cold) == XSPROF_OK);
    for (int i = 0; i < PER_THREAD; i++) {
        spin_region(hot);
        if (!(i % 10))
            spin_region(cold);
    }
    return arg;
}

/* Instances of `name` counted over all messages. */
static long counted(const char *name, int *messages) {
    char took[128], more[128];
    snprintf(took, sizeof took, "region '%s' took ", name);
    snprintf(more, sizeof more, "region '%s': ", name);
    long n = 0;
    *messages = 0;
    for (int i = 0; i < g_nmsgs; i++) {
        const char *m = g_msgs[i];
        if (!strncmp(m, took, strlen(took))) {
            const char *and = strstr(m, "(and ");
            n += 1 + (and ? atol(and + 5) : 0);
            ++*messages;
        } else if (!strncmp(m, more, strlen(more)))
            n += atol(m + strlen(more));
    }
    return n;
}

int main(void) {
    memsink_install();
    CHECK(xsprof_region_threshold_set(NULL, 1) == XSPROF_ERR_INVALID);
    CHECK(xsprof_region_threshold_set("", 1) == XSPROF_ERR_INVALID);
    CHECK(xsprof_region_threshold_set("hot", NAN) == XSPROF_ERR_INVALID);
    CHECK(xsprof_region_threshold_set("hot", 1e10) == XSPROF_ERR_INVALID);
    CHECK(xsprof_log_level_set((xsprof_log_level)4) == XSPROF_ERR_INVALID);
    CHECK(xsprof_log_level_set((xsprof_log_level)-2) == XSPROF_ERR_INVALID);
    CHECK(xsprof_log_level_get() == XSPROF_LOG_WARN); /* the default */
    CHECK(xsprof_log_handler_set(handler, &g_lock) == XSPROF_OK);
    xsprof_name_id in_handler;
    CHECK(xsprof_name_intern("in_handler", &in_handler) == XSPROF_OK); /* a new name is refused inside */
    CHECK(xsprof_region_threshold_set("hot", 0.001) == XSPROF_OK);     /* 1 us */
    CHECK(xsprof_region_threshold_set("cold", 1) == XSPROF_OK);
    CHECK(xsprof_region_threshold_set("cold", 0) == XSPROF_OK); /* removed */
    CHECK(xsprof_region_threshold_set("slow_default", 0.5) == XSPROF_OK);
    CHECK(xsprof_region_threshold_set("slow_default", -1) == XSPROF_OK);

    int64_t t0 = xsprof_clock_now();
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_create(&th[i], NULL, worker, NULL) == 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    double elapsed_s = (double)(xsprof_clock_now() - t0) * 1e-9;
    CHECK(xsprof_finalize() == XSPROF_OK); /* says the instances not counted yet */

    int messages, none;
    long hot = counted("hot", &messages);
    if (hot != THREADS * PER_THREAD || messages < 1 || messages > 1 + (int)elapsed_s) {
        fprintf(stderr, "hot: %ld instances counted in %d messages over %.3f s, expected %d:\n", hot, messages,
                elapsed_s, THREADS * PER_THREAD);
        for (int i = 0; i < g_nmsgs; i++)
            fprintf(stderr, "  %s\n", g_msgs[i]);
        return 1;
    }
    CHECK(counted("cold", &none) == 0);
    CHECK(counted("in_handler", &none) == 0);
    CHECK(g_set_inside == XSPROF_ERR_STATE);
    CHECK(memsink_loaded && memsink_count_regions("hot") == THREADS * PER_THREAD);
    CHECK(memsink_count_regions("in_handler") >= 1);

    CHECK(xsprof_log_handler_set(NULL, NULL) == XSPROF_OK);
    int calls = g_calls;
    xsprof_region_end(); /* misuse: an anomaly, said on stderr now */
    CHECK(g_calls == calls);
    printf("log: %ld instances above the threshold counted in %d messages + finalize over %.3f s, %d handler calls\n",
           hot, messages, elapsed_s, calls);
    return 0;
}
