/* 8 recording threads while a controller thread toggles the session and
 * adds/removes observers: no crash, begin/end stay balanced, every recorded
 * region is complete and well nested, a removed observer is never called
 * again. Also run under ThreadSanitizer in CI. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <xsprof/xsprof.h>
#include "memsink.h"

#define NTHREADS 8
#define ITERS 20000

static atomic_int stop_flag;
static atomic_long obs_calls_after_remove;
static atomic_int observer_removed[64];

static void on_end(const xsprof_region_info *info, void *user) {
    long slot = (long)(intptr_t)user;
    if (atomic_load(&observer_removed[slot]))
        atomic_fetch_add(&obs_calls_after_remove, 1);
    if (info->t_end < info->t_begin)
        atomic_fetch_add(&obs_calls_after_remove, 1000000);
}

static void *worker(void *arg) {
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        xsprof_region_begin("outer");
        xsprof_region_begin("inner");
        xsprof_region_end();
        xsprof_region_end();
    }
    return NULL;
}

static void *controller(void *arg) {
    (void)arg;
    long slot = 0;
    while (!atomic_load(&stop_flag)) {
        xsprof_session_toggle();
        xsprof_observer_handle h;
        if (xsprof_observer_add(NULL, on_end, (void *)(intptr_t)(slot % 64), 0.5, 0, &h) == XSPROF_OK) {
            usleep(50);
            xsprof_observer_remove(h);
            atomic_store(&observer_removed[slot % 64], 1);
            usleep(20);
            atomic_store(&observer_removed[slot % 64], 0);
            slot++;
        }
    }
    xsprof_session_start();
    return NULL;
}

int main(void) {
    memsink_install();
    pthread_t th[NTHREADS], ctl;
    pthread_create(&ctl, NULL, controller, NULL);
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&stop_flag, 1);
    pthread_join(ctl, NULL);
    /* Threads created after the toggling are covered too. */
    pthread_t late;
    pthread_create(&late, NULL, worker, NULL);
    pthread_join(late, NULL);
    CHECK(xsprof_finalize() == XSPROF_OK);
    CHECK(memsink_loaded);
    CHECK(atomic_load(&obs_calls_after_remove) == 0);
    xsprof_rank_data *d = &memsink_data;
    size_t outer = memsink_count_regions("outer"), inner = memsink_count_regions("inner");
    CHECK(outer <= (size_t)(NTHREADS + 1) * ITERS && inner <= (size_t)(NTHREADS + 1) * ITERS);
    CHECK(outer >= ITERS); /* at least the late thread recorded everything */
    for (size_t i = 0; i < d->nregions; i++) {
        const xsprof_io_region *r = &d->regions[i];
        CHECK(r->t_end >= r->t_begin);
        const char *n = xsprof_rank_data_string(d, r->name);
        CHECK(!strcmp(n, "outer") ? r->depth == 0 : r->depth == 1);
    }
    CHECK(d->anomalies == 0);
    printf("test_threads: %zu outer, %zu inner regions recorded of %d attempted; %zu threads\n", outer, inner,
           (NTHREADS + 1) * ITERS, d->nthreads);
    return 0;
}
