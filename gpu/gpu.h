/* gpu/gpu.h — the GPU collectors: CUDA activity through CUPTI (libcupti is
 * loaded with dlopen at run time, so one build serves GPU and CPU nodes) and
 * NVTX ranges through the NVTX injection interface. Owner: gpu.
 *
 * Everything here is hidden; the only exported symbol of gpu/ is the NVTX
 * entry point InitializeInjectionNvtx2 (cmake/exports.map).
 *
 * Error convention: xsprof_status (XSPROF_OK == 0). A CUPTI failure never
 * fails the program: it disables GPU collection, logs one warning with the
 * reason and stores it as run metadata "gpu_disabled_reason". */
#ifndef XSPROF_GPU_GPU_H
#define XSPROF_GPU_GPU_H

#include <stddef.h>
#include <stdint.h>
#include "xsprof_config.h"
#include "core/collector.h"

/* XSPROF_GPU: off, on (always try CUPTI), auto (only when the driver and
 * libcupti load). Unset means auto. */
enum xsprof_gpu_mode { XSPROF_GPU_MODE_OFF = 0, XSPROF_GPU_MODE_ON = 1, XSPROF_GPU_MODE_AUTO = 2 };
XSPROF_HIDDEN xsprof_status xsprof_gpu_mode_parse(const char *value, enum xsprof_gpu_mode *mode);

/* Start CUPTI activity collection as XSPROF_GPU asks (the library
 * constructor calls it once). XSPROF_OK when collecting; otherwise the
 * reason is in xsprof_cupti_disabled_reason() and was logged once. */
XSPROF_HIDDEN xsprof_status xsprof_cupti_start(void);
/* 1 while CUPTI activity records are being collected. */
XSPROF_HIDDEN int xsprof_cupti_active(void);
/* Why GPU collection is off ("" while active or before start). */
XSPROF_HIDDEN const char *xsprof_cupti_disabled_reason(void);
/* Records CUPTI reported as dropped so far (buffers full or refused). */
XSPROF_HIDDEN uint64_t xsprof_cupti_dropped(void);

/* Point NVTX_INJECTION64_PATH at the library holding xsprof unless the
 * user or another tool already set it (library constructor). */
XSPROF_HIDDEN xsprof_status xsprof_nvtx_env_set(void);

/* XSPROF_NVTX_EMIT=1: xsprof's regions also become NVTX ranges of the
 * domain "xsprof" (an observer); XSPROF_CUDA_PROFILER_API=1: session
 * start/stop call cudaProfilerStart/Stop when CUDA is in the process
 * (library constructor, nvtx_emit.c). */
XSPROF_HIDDEN void xsprof_nvtx_emit_start(void);

/* The handle xsprof's capture (nvtx.c) gives the domain "xsprof": its
 * ranges are xsprof's own regions, emitted, never recorded again. Any
 * value past the domain table's indices. */
#define XSPROF_NVTX_OWN_DOMAIN ((uintptr_t)0x10000)

/* Depth of NVTX push/pop ranges in xsprof_rec_region.depth: BASE + NVTX
 * nesting level. Core keeps its own region stack (at most 256 levels, no
 * hook to share it), and the reader attaches pending args to the next region
 * of the same depth: a separate depth range keeps NVTX ranges from taking
 * the args of an open xsprof region. */
#define XSPROF_NVTX_DEPTH_BASE 256u

/* Depth marker of NVTX start/end ranges in xsprof_rec_region.depth: they
 * may begin and end on different threads and do not nest, so merge draws
 * them as async spans (args "nvtx_range_id", "start_thread"). */
#define XSPROF_NVTX_DEPTH_ASYNC 0xFFFFu

#if XSPROF_HAVE_CUPTI
#include <cupti.h>

/* Load libcupti (XSPROF_CUPTI_LIB, the default search path, then the CUDA
 * library folders) and resolve the entry points xsprof uses. Does not
 * enable any activity. On failure `why` holds the reason. Idempotent. */
XSPROF_HIDDEN xsprof_status xsprof_cupti_load(char *why, size_t len);

/* Decode one CUPTI activity record into `out` (timestamps shifted by
 * offset_ns onto the xsprof clock). XSPROF_ERR_UNSUPPORTED for kinds xsprof
 * does not record; XSPROF_ERR_STATE for API records when libcupti is not
 * loaded (names come from cuptiGetCallbackName). */
XSPROF_HIDDEN xsprof_status xsprof_cupti_decode(const CUpti_Activity *rec, int64_t offset_ns, xsprof_rec_gpu *out);

/* The CUPTI callback-API subscriber: at a thread's first CUDA API call it
 * maps the OS thread id to the xsprof thread id, so API activity records
 * (which only carry the OS id) name the xsprof thread that made the call. */
XSPROF_HIDDEN void CUPTIAPI xsprof_cupti_api_enter(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                                   const void *data);

/* The buffer-requested callback registered with CUPTI: a malloc'd 1 MiB
 * buffer, or none (CUPTI then drops and counts) once 64 are in flight. */
XSPROF_HIDDEN void CUPTIAPI xsprof_cupti_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);

/* The buffer-completed callback registered with CUPTI: walks the buffer
 * with cuptiActivityGetNextRecord, appends one XSPROF_REC_GPU per decoded
 * record, adds CUPTI's dropped count and frees the buffer (malloc'd). Runs
 * on CUPTI's worker thread or on the thread that flushes. */
XSPROF_HIDDEN void CUPTIAPI xsprof_cupti_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
                                                          size_t size, size_t valid);
#endif

#endif
