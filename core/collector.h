/* core/collector.h — the internal (hidden) interface that other collectors
 * (mpi/, pmpi_wrappers/, gpu/) use to append records and learn the process
 * identity. Owner: core. Nothing here is exported from the shared libraries. */
#ifndef XSPROF_CORE_COLLECTOR_H
#define XSPROF_CORE_COLLECTOR_H

#include <stdint.h>
#include <stddef.h>
#include "xsprof/xsprof.h"
#include "record.h"

#define XSPROF_HIDDEN __attribute__((visibility("hidden")))

/* Reserve `size` bytes (a multiple of 8, at most 4096) in the calling
 * thread's buffer. Returns NULL when collection is off, the thread is inside
 * xsprof already, or the record had to be dropped (the drop is counted).
 * The caller fills the record (header included) and calls commit. */
XSPROF_HIDDEN void *xsprof_buf_reserve(uint32_t size);
XSPROF_HIDDEN void xsprof_buf_commit(void *rec);

/* Like reserve, but also works when the session is stopped: definitions
 * (strings, threads, communicators, clock samples) must never be skipped. */
XSPROF_HIDDEN void *xsprof_buf_reserve_def(uint32_t size);

/* Append a fully built record (copying `size` bytes); definitions flag as above. */
XSPROF_HIDDEN xsprof_status xsprof_buf_append(const void *rec, uint32_t size, int is_definition);
/* The same for a record also kept while the session is paused (stopped,
 * or outside the schedule's active window) once the journal is open (it
 * never opens it: xsprof_recording_prepare does, at a safe point):
 * XSPROF_ERR_DISABLED (nothing written) when it cannot be kept. */
XSPROF_HIDDEN xsprof_status xsprof_buf_append_paused(const void *rec, uint32_t size);

/* Intern a string for a record's string-id field (names, keys, values).
 * Unlike the public xsprof_name_intern, never flags filtered names. */
XSPROF_HIDDEN xsprof_status xsprof_string_intern(const char *s, uint32_t *id);

/* xsprof thread id of the calling thread (dense from 0). */
XSPROF_HIDDEN uint32_t xsprof_thread_self(void);

/* Switch the clock to the TSC once its rate against CLOCK_MONOTONIC has been
 * measured over long enough (core/clock.h); a cheap no-op otherwise. Called
 * by the writer thread and after MPI_Init, before the first clock sample. */
XSPROF_HIDDEN void xsprof_clock_calibrate(void);

/* Per-thread re-entry guard: returns 1 if the caller may record (and marks
 * the thread busy), 0 if it is already inside xsprof. Always pair with leave. */
XSPROF_HIDDEN int xsprof_guard_enter(void);
XSPROF_HIDDEN void xsprof_guard_leave(void);

/* 1 while collection is on (session active and not finalized). */
XSPROF_HIDDEN int xsprof_collecting(void);

/* Process identity. Before MPI_Init the rank comes from the launcher's
 * environment; mpi/ confirms it and the agreed run directory (chosen by rank
 * 0) after MPI_Init. Moves the journal if the directory changed. */
XSPROF_HIDDEN xsprof_status xsprof_identity_set(int rank, int size, const char *run_dir);
XSPROF_HIDDEN int xsprof_identity_rank(void);
XSPROF_HIDDEN int xsprof_identity_size(void);
/* Run directory in use ("" before the first record): xsprof_run_dir(), public. */
/* The default run directory name this process would choose (rank 0's wins). */
XSPROF_HIDDEN xsprof_status xsprof_output_default_dir(char *buf, size_t len);

/* Run metadata (key/value strings stored as file attributes). */
XSPROF_HIDDEN xsprof_status xsprof_meta_set(const char *key, const char *value);
/* A communicator's definition, any number of members (split over COMM and
 * COMM_MORE records when they do not fit one record). */
XSPROF_HIDDEN xsprof_status xsprof_comm_define(uint32_t id, const char *name, uint32_t parent, const int32_t *members,
                                               uint32_t n);

/* Hooks run by xsprof_finalize before the data is written (mpi/ takes the
 * final clock sample there), in registration order. At most 8. */
typedef void (*xsprof_finalize_hook)(void);
XSPROF_HIDDEN xsprof_status xsprof_finalize_hook_add(xsprof_finalize_hook fn);
/* 1 when another copy of the core was loaded before this one (a program
 * linked with -lxsprof and run with libxsprof-mpi.so preloaded): the
 * program's calls reach that copy only, so this one starts nothing. */
XSPROF_HIDDEN int xsprof_core_shadowed(void);
/* Defined (1) in libxsprof-mpi only: this copy has the MPI wrappers. */
XSPROF_HIDDEN extern const int xsprof_mpi_linked __attribute__((weak));

/* Creates this rank's journal now when the session records, or when
 * XSPROF_MEMORY=1 keeps memory rows while it is paused (else its first
 * record does): the file, the first chunks, the writer thread and the
 * start hooks then cost the caller's time (mpi/: inside MPI_Init, whose
 * exit starts the measured window), not the program's first event's. */
XSPROF_HIDDEN xsprof_status xsprof_recording_prepare(void);

/* Hooks run once when this process starts to really record (its journal
 * is created): messages that only matter for a profiled process, not for
 * every program that merely loads the library. At most 8. */
XSPROF_HIDDEN xsprof_status xsprof_start_hook_add(xsprof_finalize_hook fn);

/* How the run ended, stored as the rank file's end_state ("finalized",
 * "exit without MPI_Finalize", ...). mpi/ sets a pessimistic value at
 * MPI_Init and "finalized" at MPI_Finalize. */
XSPROF_HIDDEN void xsprof_end_state_set(const char *state);

/* Logging: one message (no newline) at an xsprof_log_level (xsprof.h);
 * the level set by XSPROF_LOG / xsprof_log_level_set selects what is
 * passed on, to the application's handler or as one "xsprof[rank R] ..."
 * line on stderr. Not for signal handlers (the handler may be anything). */
XSPROF_HIDDEN void xsprof_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Hooks run after each change of the user session (xsprof_session_start,
 * stop, toggle), outside xsprof's locks, with the new state. At most 8. */
typedef void (*xsprof_session_hook)(int on);
XSPROF_HIDDEN xsprof_status xsprof_session_hook_add(xsprof_session_hook fn);

/* Configuration lookups (XSPROF_* environment, validated once at start). */
XSPROF_HIDDEN const char *xsprof_config_get(const char *name); /* NULL when unset */

/* Call stacks (callstack.c): `n` return addresses (innermost first, at
 * most XSPROF_STACK_MAX) interned per process; the first use writes the
 * definition (xsprof_rec_stack). Returns the id (from 1), 0 when the stack
 * cannot be recorded (empty, too deep, table full, out of memory). */
XSPROF_HIDDEN uint32_t xsprof_callstack_intern(const uint64_t *pcs, uint32_t n);
/* The call stack id of an allocation of `size` bytes made by the program
 * (its caller out, xsprof's frames left out), 0 when it is below
 * XSPROF_MEMORY_STACK_BYTES or could not be unwound (memstack.c). */
XSPROF_HIDDEN uint32_t xsprof_memstack_capture(uint64_t size);

/* Loaded objects (modules.c): writes xsprof_rec_module records for the
 * objects loaded or unloaded since the last call (cheap when nothing
 * changed). Runs when recording starts, before each new call stack and at
 * finalize. */
XSPROF_HIDDEN void xsprof_modules_check(void);

/* Count an anomaly (API misuse) without failing the program. */
XSPROF_HIDDEN void xsprof_anomaly(const char *what);

#endif
