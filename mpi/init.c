/* mpi/init.c — the MPI life cycle of a rank: after PMPI_Init the rank
 * learns its identity, rank 0 chooses the run directory for everyone, the
 * communicator registry, metadata, topology and the first clock sample are
 * recorded, and the wrappers are switched on (one flag). Before
 * PMPI_Finalize the final clock sample is taken, the wrappers are switched
 * off and xsprof_finalize writes the rank file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "mpi/xsprof_mpi.h"

xsprof_mpi_state xsprof_mpi_g = {.sync_comm = MPI_COMM_NULL, .group_mask = (1u << XSPROF_GRP_COUNT) - 1};
static int g_initialized;

static const char *const g_group_names[XSPROF_GRP_COUNT] = {"p2p", "coll", "rma", "io", "comm", "type", "misc"};

unsigned xsprof_mpi_groups_parse(const char *spec) {
    unsigned all = (1u << XSPROF_GRP_COUNT) - 1, plus = 0, minus = 0;
    if (!spec || !*spec)
        return all;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        int neg = *tok == '-', g;
        const char *name = (*tok == '-' || *tok == '+') ? tok + 1 : tok;
        if (!strcmp(name, "all")) {
            if (neg)
                minus = all;
            else
                plus = all;
            continue;
        }
        for (g = 0; g < XSPROF_GRP_COUNT && strcmp(name, g_group_names[g]); g++)
            ;
        if (g == XSPROF_GRP_COUNT) {
            xsprof_log(XSPROF_LOG_WARN, "XSPROF_MPI: unknown group '%s' (groups: p2p coll rma io comm type misc)",
                       name);
            continue;
        }
        if (neg)
            minus |= 1u << g;
        else
            plus |= 1u << g;
    }
    return (plus ? plus : all) & ~minus;
}

/* The command line, arguments separated by spaces (/proc/self/cmdline). */
static void command_line(char *out, size_t len) {
    out[0] = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, len - 1);
    close(fd);
    if (n <= 0)
        return;
    out[n] = 0;
    for (ssize_t i = 0; i < n - 1; i++)
        if (!out[i])
            out[i] = ' ';
}

/* The transports' eager limits (MPI_T control variables whose name says
 * eager_limit: Open MPI's btl_vader_eager_limit, btl_tcp_eager_limit, ...),
 * each as meta "mpit:<name>": a send of a message below its path's limit
 * returns without waiting for the receiver, so the merge counts no Late
 * Receiver for it (merge/README "Wait states"). Nothing when the library
 * has no such variable or MPI_T is refused. */
static void eager_limits_record(void) {
    int prov, n = 0;
    if (PMPI_T_init_thread(MPI_THREAD_SINGLE, &prov) != MPI_SUCCESS)
        return;
    if (PMPI_T_cvar_get_num(&n) != MPI_SUCCESS)
        n = 0;
    for (int i = 0; i < n; i++) {
        char name[256], key[300], val[32];
        int nlen = (int)sizeof name, dlen = 0, verb, bind, scope, count;
        MPI_Datatype dt;
        MPI_T_enum et;
        if (PMPI_T_cvar_get_info(i, name, &nlen, &verb, &dt, &et, NULL, &dlen, &bind, &scope) != MPI_SUCCESS ||
            !strstr(name, "eager_limit") || strstr(name, "rndv") || bind != MPI_T_BIND_NO_OBJECT)
            continue;
        MPI_T_cvar_handle h;
        if (PMPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS)
            continue;
        unsigned long long v = 0;
        int ok = count == 1;
        if (ok && (dt == MPI_INT || dt == MPI_UNSIGNED)) {
            unsigned int x = 0;
            ok = PMPI_T_cvar_read(h, &x) == MPI_SUCCESS;
            v = x;
        } else if (ok && (dt == MPI_UNSIGNED_LONG || dt == MPI_LONG)) {
            unsigned long x = 0;
            ok = PMPI_T_cvar_read(h, &x) == MPI_SUCCESS;
            v = x;
        } else if (ok && (dt == MPI_UNSIGNED_LONG_LONG || dt == MPI_LONG_LONG || dt == MPI_COUNT)) {
            unsigned long long x = 0;
            ok = PMPI_T_cvar_read(h, &x) == MPI_SUCCESS;
            v = x;
        } else {
            ok = 0;
        }
        PMPI_T_cvar_handle_free(&h);
        if (!ok)
            continue;
        snprintf(key, sizeof key, "mpit:%s", name);
        snprintf(val, sizeof val, "%llu", v);
        xsprof_meta_set(key, val);
    }
    PMPI_T_finalize();
}

static void meta_record(void) {
    char buf[4096];
    int len = 0;
    if (PMPI_Get_library_version(buf, &len) == MPI_SUCCESS) {
        buf[len < (int)sizeof buf ? len : (int)sizeof buf - 1] = 0;
        char *nl = strchr(buf, '\n'); /* first line: name and version */
        if (nl)
            *nl = 0;
        xsprof_meta_set("mpi_version", buf);
    }
    if (gethostname(buf, sizeof buf - 1) == 0) {
        buf[sizeof buf - 1] = 0;
        xsprof_meta_set("host", buf);
    }
    command_line(buf, sizeof buf);
    xsprof_meta_set("command", buf);
    static const char *const levels[] = {"single", "funneled", "serialized", "multiple"};
    int l = xsprof_mpi_g.thread_level;
    xsprof_meta_set("mpi_thread_level", l >= 0 && l <= 3 ? levels[l] : "unknown");
    snprintf(buf, sizeof buf, "%d", xsprof_mpi_g.size);
    xsprof_meta_set("mpi_world_size", buf);
    eager_limits_record();
}

void xsprof_mpi_init_after(int thread_level) {
    if (g_initialized)
        return;
    g_initialized = 1;
    PMPI_Comm_rank(MPI_COMM_WORLD, &xsprof_mpi_g.rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &xsprof_mpi_g.size);
    xsprof_mpi_g.thread_level = thread_level;
    /* Rank 0's run directory wins: the default name holds a timestamp. */
    char dir[4096] = "";
    if (xsprof_mpi_g.rank == 0) {
        const char *cur = xsprof_run_dir();
        if (cur && *cur)
            snprintf(dir, sizeof dir, "%s", cur);
        else if (xsprof_output_default_dir(dir, sizeof dir) != XSPROF_OK)
            dir[0] = 0;
    }
    PMPI_Bcast(dir, (int)sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    xsprof_status st = xsprof_identity_set(xsprof_mpi_g.rank, xsprof_mpi_g.size, dir);
    if (st != XSPROF_OK)
        xsprof_log(XSPROF_LOG_WARN, "run directory %s: %s", dir, xsprof_status_string(st));
    xsprof_end_state_set("exit without MPI_Finalize");
    xsprof_mpi_g.group_mask = xsprof_mpi_groups_parse(xsprof_config_get("XSPROF_MPI"));
    xsprof_mpi_g.callsite_depth = xsprof_mpi_callsite_depth_parse(xsprof_config_get("XSPROF_CALLSITE_DEPTH"));
    const char *stall = xsprof_config_get("XSPROF_TEST_SEND_STALL_US");
    xsprof_mpi_g.test_send_stall_ns = stall ? (int64_t)(atof(stall) * 1e3) : 0;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &xsprof_mpi_g.sync_comm) != MPI_SUCCESS)
        xsprof_mpi_g.sync_comm = MPI_COMM_NULL;
    if (xsprof_comm_registry_init() != XSPROF_OK) {
        xsprof_log(XSPROF_LOG_WARN, "MPI communicator registry unavailable: MPI calls are not recorded");
        return;
    }
    /* the journal's setup inside MPI_Init's record, not after it, where the
     * report counted it as the program's own work (20-40 ms a rank) */
    xsprof_recording_prepare();
    const char *period = xsprof_config_get("XSPROF_CLOCK_SYNC_S");
    if (period && *period) {
        char *end = NULL;
        double sec = strtod(period, &end);
        if (end == period || *end || !(sec > 0))
            xsprof_log(XSPROF_LOG_WARN, "XSPROF_CLOCK_SYNC_S=%s: expected seconds > 0, periodic clock samples off",
                       period);
        else
            xsprof_mpi_g.sync_period_ns = (int64_t)(sec * 1e9);
    }
    meta_record();
    xsprof_topo_record();
    xsprof_clock_calibrate();
    xsprof_clock_sync(XSPROF_CLOCK_INIT);
    atomic_store(&xsprof_mpi_g.on, 1);
}

/* Tells the core (core/collector.h) that this copy has the MPI wrappers. */
const int xsprof_mpi_linked = 1;

void xsprof_mpi_finalize_before(unsigned op, const void *site, int64_t t0) {
    if (g_initialized && atomic_load(&xsprof_mpi_g.on)) {
        /* Other threads stop recording MPI now: one flag. */
        atomic_store(&xsprof_mpi_g.on, 0);
        xsprof_clock_sync(XSPROF_CLOCK_FINAL);
        xsprof_mpi_record_plain(op, site, t0, xsprof_clock_now());
        xsprof_end_state_set("finalized");
    }
    xsprof_finalize();
    if (xsprof_mpi_g.sync_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&xsprof_mpi_g.sync_comm);
    /* Nothing records MPI any more: the registry's entries can go. */
    if (g_initialized)
        xsprof_comm_registry_fini();
}

void xsprof_mpi_abort_before(unsigned op, const void *site, int64_t t0, int errorcode) {
    char state[64];
    snprintf(state, sizeof state, "MPI_Abort (errorcode %d)", errorcode);
    xsprof_end_state_set(state); /* if the process still exits through atexit */
    if (g_initialized && atomic_load(&xsprof_mpi_g.on)) {
        /* Open MPI kills the caller: no handler runs, so the journal says
         * why (the reader takes the last end_state) */
        xsprof_meta_set("end_state", state);
        xsprof_mpi_record_plain(op, site, t0, xsprof_clock_now());
    }
}

void xsprof_mpi_pcontrol(int level) { atomic_store(&xsprof_mpi_g.paused, level == 0); }
