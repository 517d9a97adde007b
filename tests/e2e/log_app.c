/* tests/e2e/log_app.c — xsprof's messages through the application's
 * logger (xsprof_log_handler_set): region thresholds from
 * XSPROF_WARN_REGION_MS and xsprof_region_threshold_set, memory above
 * XSPROF_WARN_RSS_MB, session stop/start at info level. The handler writes
 * "LEVEL RANK TEXT" lines to DIR/log-RANK.txt; check_log.py reads them.
 * The handler records a region of its own and tries to replace itself
 * (refused: it would wait for itself).
 *
 * usage: log_app DIR   (run under mpirun) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <xsprof/xsprof.h>

static FILE *g_log;
static xsprof_status g_set_inside = XSPROF_OK;

static void on_message(xsprof_log_level level, int rank, const char *text, void *user) {
    (void)user;
    xsprof_region_begin("in_handler"); /* a logger that is itself profiled */
    fprintf(g_log, "%d %d %s\n", (int)level, rank, text);
    fflush(g_log);
    xsprof_region_end();
    if (__atomic_load_n(&g_set_inside, __ATOMIC_RELAXED) == XSPROF_OK) /* also called on xsprof's writer thread */
        __atomic_store_n(&g_set_inside, xsprof_log_handler_set(NULL, NULL), __ATOMIC_RELAXED);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms) { nanosleep(&(struct timespec){0, ms * 1000000L}, NULL); }

static void region_sleep(const char *name, int ms) {
    xsprof_region_begin(name);
    sleep_ms(ms);
    xsprof_region_end();
}

int main(int argc, char **argv) {
    const char *rank_env = getenv("OMPI_COMM_WORLD_RANK");
    char path[4096];
    snprintf(path, sizeof path, "%s/log-%s.txt", argc > 1 ? argv[1] : ".", rank_env ? rank_env : "0");
    if (!(g_log = fopen(path, "w")))
        return 2;
    xsprof_log_handler_set(on_message, NULL);
    xsprof_log_level_set(XSPROF_LOG_INFO);
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    xsprof_region_threshold_set("api_set", 1.0);
    xsprof_region_threshold_set("removed", 1.0);
    xsprof_region_threshold_set("removed", 0);
    for (int i = 0; i < 5; i++)
        region_sleep("solve", 30); /* XSPROF_WARN_REGION_MS solve=20 */
    region_sleep("quick", 0);
    double t0 = now_s();
    for (int i = 0; i < 20; i++)
        region_sleep("io", 6); /* io=5 */
    double io_s = now_s() - t0;
    region_sleep("api_set", 3);
    region_sleep("removed", 3);
    xsprof_session_stop();
    xsprof_session_start();
    /* 200 MiB resident: above XSPROF_WARN_RSS_MB=150 by finalize at the latest */
    size_t big = (size_t)200 << 20;
    char *mem = malloc(big);
    if (mem)
        memset(mem, 1, big);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    fprintf(g_log, "io_loop_s %.6f\nset_inside %d\nmem %d\n", io_s, (int)__atomic_load_n(&g_set_inside, __ATOMIC_RELAXED),
            mem ? mem[big - 1] : -1);
    xsprof_log_handler_set(NULL, NULL);
    fclose(g_log);
    free(mem);
    printf("rank %d: log_app done\n", rank);
    return 0;
}
