/* merge/symbols/symbols.h — addresses recorded in a rank file turned into
 * function, source file and line, inlined frames included, with elfutils'
 * libdw (the binaries' own DWARF, or their separate debug info found by
 * build-id under /usr/lib/debug). Owner: merge/symbols. Self-contained: it
 * knows rank files only through the module paths and build-ids it is given.
 *
 * Addresses are ELF addresses of a module (a process address minus the
 * module's load bias, io/FORMAT.md /definitions/modules), so the same code
 * in every rank is one address whatever each rank's ASLR did. Each unique
 * (module, address) is resolved once; later lookups are a hash probe. An
 * object without debug information or symbols gives `libfoo.so+0x1a2b` and
 * one note (xsm_symbols_notes) saying how to get symbols. Not thread-safe:
 * one xsm_symbols per thread. */
#ifndef XSM_SYMBOLS_H
#define XSM_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct xsm_frame {
    const char *function; /* never NULL: a name, or "libfoo.so+0x1a2b" when unknown */
    const char *file;     /* source file, NULL when the module has no line information */
    int line;             /* 0 when unknown */
} xsm_frame;

/* Where an address is: frames[0] is the innermost (the function inlined
 * deepest, at the address's own line), the last one the function the code
 * was compiled into, at the line where it calls the next inner one. */
typedef struct xsm_loc {
    const char *module;   /* path as given to xsm_symbols_module */
    uint64_t addr;        /* the ELF address looked up */
    int symbolized;       /* 1 when a function name was found */
    int nframes;          /* >= 1 */
    const xsm_frame *frames;
} xsm_loc;

typedef struct xsm_symbols xsm_symbols;

/* NULL when out of memory. */
xsm_symbols *xsm_symbols_open(void);
void xsm_symbols_close(xsm_symbols *s);

/* The module whose file is `path` with GNU build-id `build_id` (hex, "" or
 * NULL when unknown): a handle >= 0, the same for the same file and
 * build-id (ranks share them), -1 when out of memory. Opened at its first
 * lookup. */
int xsm_symbols_module(xsm_symbols *s, const char *path, const char *build_id);

/* Resolve ELF address `addr` of module `h`. `ret`: the address is a return
 * address (a call-stack frame), whose call is the instruction before it:
 * the lookup is at addr - 1. The result stays valid until close; NULL only
 * when h is not a handle or memory is short. */
const xsm_loc *xsm_symbols_lookup(xsm_symbols *s, int h, uint64_t addr, int ret);

/* The ELF address of the function named `name` (as lookups name it:
 * demangled) that module h defines, by its symbol table (the lowest of
 * several): 0 with *addr set, or -1 when it defines none (or memory is
 * short). The module's symbols are indexed by name at the first call. */
int xsm_symbols_function(xsm_symbols *s, int h, const char *name, uint64_t *addr);

/* Calls fn once per module that gave incomplete answers (file missing or
 * changed since the run, no symbols, no line information), with one line
 * saying how to get symbols. Returns the number of notes. */
size_t xsm_symbols_notes(const xsm_symbols *s, void (*fn)(void *user, const char *note), void *user);

/* Unique addresses resolved so far (lookups that were not cache hits). */
uint64_t xsm_symbols_resolved(const xsm_symbols *s);

/* Sharing the work (mpirun -np K xsmerge): every address s resolved, and
 * what it found out about its modules, written to f / read from f into s
 * (addresses s knows already are kept as they are), so one process's
 * lookups hit what the others resolved. 0, -1 on a write/read error, a
 * damaged file or short memory (s stays usable; what was read is kept). */
int xsm_symbols_save(const xsm_symbols *s, FILE *f);
int xsm_symbols_load(xsm_symbols *s, FILE *f);

#endif
