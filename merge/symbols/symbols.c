/* merge/symbols/symbols.c — see symbols.h. One Dwfl per module file,
 * reported at base 0 so that its addresses are the file's own; libdw's
 * standard debuginfo search finds separate debug files (.gnu_debuglink,
 * /usr/lib/debug/.build-id/). */
#include "merge/symbols/symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MOD_UNOPENED = 0, MOD_OPEN = 1, MOD_MISSING = -1, MOD_CHANGED = -2 };

typedef struct cu_index cu_index;
static void cu_index_free(cu_index *x);

typedef struct sym_mod {
    char *path;
    char *build_id;
    const char *base;  /* file name part of path */
    Dwfl *dwfl;
    Dwfl_Module *m;
    int state;
    int no_symbols, no_lines; /* some lookup found none */
    cu_index **cus;           /* compilation units indexed so far, last used first */
    int ncus, capcus;
    struct fn_sym *fns;       /* its defined functions by name (xsm_symbols_function) */
    size_t nfns;
    int fns_done;
} sym_mod;

typedef struct fn_sym {
    const char *name; /* demangled; the Dwfl's or the demangler's (owned) */
    uint64_t addr;
} fn_sym;

typedef struct sym_entry {
    uint64_t addr;
    int mod;
    int ret;
    xsm_loc loc;
    struct sym_entry *next;
} sym_entry;

struct xsm_symbols {
    sym_mod *mods;
    int nmods, capmods;
    sym_entry **table;
    size_t nbuckets, nentries;
    uint64_t resolved;
    char **owned; /* demangled names, freed at close */
    size_t nowned, capowned;
};

/* d (malloc'd) kept until close: d, or NULL (freed) when memory is short. */
static const char *own(xsm_symbols *s, char *d)
{
    if (!d)
        return NULL;
    if (s->nowned == s->capowned) {
        size_t cap = s->capowned ? 2 * s->capowned : 64;
        char **v = realloc(s->owned, cap * sizeof *v);
        if (!v) {
            free(d);
            return NULL;
        }
        s->owned = v;
        s->capowned = cap;
    }
    return s->owned[s->nowned++] = d;
}

/* The C++ runtime's demangler (libstdc++, linked): symbol-table names of
 * C++ code are mangled (_ZN9LAMMPS_NS9CommBrick12reverse_commEv is
 * LAMMPS_NS::CommBrick::reverse_comm()); DWARF names are not. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static const char *demangle(xsm_symbols *s, const char *name)
{
    if (strncmp(name, "_Z", 2) != 0)
        return name;
    int st = 0;
    char *d = __cxa_demangle(name, NULL, NULL, &st);
    if (!d || st != 0) {
        free(d);
        return name;
    }
    const char *o = own(s, d);
    return o ? o : name;
}

static const Dwfl_Callbacks sym_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

xsm_symbols *xsm_symbols_open(void)
{
    xsm_symbols *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->nbuckets = 4096;
    s->table = calloc(s->nbuckets, sizeof *s->table);
    if (!s->table) {
        free(s);
        return NULL;
    }
    return s;
}

static void entry_free(sym_entry *e)
{
    if (!e->loc.symbolized)
        free((char *)e->loc.frames[0].function); /* the formatted module+offset */
    free((xsm_frame *)e->loc.frames);
    free(e);
}

void xsm_symbols_close(xsm_symbols *s)
{
    if (!s)
        return;
    for (size_t b = 0; b < s->nbuckets; b++)
        for (sym_entry *e = s->table[b], *n; e; e = n) {
            n = e->next;
            entry_free(e);
        }
    free(s->table);
    for (int i = 0; i < s->nmods; i++) {
        for (int k = 0; k < s->mods[i].ncus; k++)
            cu_index_free(s->mods[i].cus[k]);
        free(s->mods[i].cus);
        free(s->mods[i].fns);
        if (s->mods[i].dwfl)
            dwfl_end(s->mods[i].dwfl);
        free(s->mods[i].path);
        free(s->mods[i].build_id);
    }
    free(s->mods);
    for (size_t i = 0; i < s->nowned; i++)
        free(s->owned[i]);
    free(s->owned);
    free(s);
}

int xsm_symbols_module(xsm_symbols *s, const char *path, const char *build_id)
{
    if (!s || !path)
        return -1;
    build_id = build_id ? build_id : "";
    for (int i = 0; i < s->nmods; i++)
        if (!strcmp(s->mods[i].path, path) && !strcmp(s->mods[i].build_id, build_id))
            return i;
    if (s->nmods == s->capmods) {
        int cap = s->capmods ? 2 * s->capmods : 32;
        sym_mod *m = realloc(s->mods, (size_t)cap * sizeof *m);
        if (!m)
            return -1;
        s->mods = m;
        s->capmods = cap;
    }
    sym_mod *m = &s->mods[s->nmods];
    memset(m, 0, sizeof *m);
    m->path = strdup(path);
    m->build_id = strdup(build_id);
    if (!m->path || !m->build_id) {
        free(m->path);
        free(m->build_id);
        return -1;
    }
    const char *slash = strrchr(m->path, '/');
    m->base = slash ? slash + 1 : m->path;
    return s->nmods++;
}

static void hex_of(const unsigned char *p, int n, char *out, size_t len)
{
    out[0] = 0;
    for (int i = 0; i < n && (size_t)(2 * i + 2) < len; i++)
        snprintf(out + 2 * i, 3, "%02x", p[i]);
}

/* The file's build-id must be the recorded one: a rebuilt library would
 * give plausible, wrong names. When it is not, the debug file of the
 * recorded build-id (/usr/lib/debug/.build-id/) still describes the code. */
static void mod_open(sym_mod *m)
{
    m->state = MOD_MISSING;
    const char *file = m->path;
    char debug[512];
    if (access(file, R_OK) != 0 && !m->build_id[0])
        return;
    m->dwfl = dwfl_begin(&sym_callbacks);
    if (!m->dwfl)
        return;
    dwfl_report_begin(m->dwfl);
    m->m = access(file, R_OK) == 0 ? dwfl_report_elf(m->dwfl, m->base, file, -1, 0, false) : NULL;
    if (m->m && m->build_id[0]) {
        const unsigned char *bits = NULL;
        GElf_Addr vaddr;
        int n = dwfl_module_build_id(m->m, &bits, &vaddr);
        char hex[128];
        hex_of(bits, n > 0 ? n : 0, hex, sizeof hex);
        if (strcmp(hex, m->build_id)) {
            m->m = NULL;
            m->state = MOD_CHANGED;
        }
    }
    if (!m->m && strlen(m->build_id) > 2) {
        snprintf(debug, sizeof debug, "/usr/lib/debug/.build-id/%.2s/%s.debug", m->build_id, m->build_id + 2);
        dwfl_report_end(m->dwfl, NULL, NULL);
        dwfl_end(m->dwfl);
        m->dwfl = dwfl_begin(&sym_callbacks);
        if (!m->dwfl)
            return;
        dwfl_report_begin(m->dwfl);
        if (access(debug, R_OK) == 0)
            m->m = dwfl_report_elf(m->dwfl, m->base, debug, -1, 0, false);
    }
    dwfl_report_end(m->dwfl, NULL, NULL);
    if (m->m)
        m->state = MOD_OPEN;
    else if (m->state != MOD_CHANGED)
        m->state = MOD_MISSING;
}

/* Name of a function DIE: an inlined instance or an out-of-line copy
 * takes it from its abstract origin, which dwarf_diename follows. */
static const char *die_name(Dwarf_Die *d) { return dwarf_diename(d); }

typedef struct frames {
    xsm_frame *v;
    int n, cap;
} frames;

static int frames_push(frames *f, const char *fn, const char *file, int line)
{
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 4;
        xsm_frame *v = realloc(f->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = (xsm_frame){fn, file, line};
    return 0;
}

/* Inlined frames come from an index of each compilation unit, built at its
 * first address: every DW_TAG_subprogram and DW_TAG_inlined_subroutine with
 * code, one interval per address range, sorted by start, each with the
 * nearest such DIE above it. (dwarf_getscopes walks the CU's whole DIE tree
 * at every lookup, 1 300 addresses/s on xsmerge's own DWARF.) The
 * innermost interval holding an address is the first one holding it when
 * walking back from the last interval that starts at or before it: the
 * intervals after a function's own start are its nested ones. */
typedef struct cu_fn {
    Dwarf_Die die;
    int parent; /* index in cu_index.fn, -1 for a subprogram */
    int tag;
} cu_fn;

typedef struct cu_iv {
    Dwarf_Addr lo, hi;
    int fn;
    int depth;
} cu_iv;

struct cu_index {
    Dwarf_Off off; /* of the CU DIE */
    cu_fn *fn;
    int nfn, capfn;
    cu_iv *iv;
    size_t niv, capiv;
};

static int cu_add_fn(cu_index *x, Dwarf_Die *d, int parent, int tag)
{
    if (x->nfn == x->capfn) {
        int cap = x->capfn ? 2 * x->capfn : 64;
        cu_fn *v = realloc(x->fn, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        x->fn = v;
        x->capfn = cap;
    }
    x->fn[x->nfn] = (cu_fn){*d, parent, tag};
    return x->nfn++;
}

static int cu_add_iv(cu_index *x, Dwarf_Addr lo, Dwarf_Addr hi, int fn, int depth)
{
    if (x->niv == x->capiv) {
        size_t cap = x->capiv ? 2 * x->capiv : 256;
        cu_iv *v = realloc(x->iv, cap * sizeof *v);
        if (!v)
            return -1;
        x->iv = v;
        x->capiv = cap;
    }
    x->iv[x->niv++] = (cu_iv){lo, hi, fn, depth};
    return 0;
}

/* Children of d: functions with code become entries; blocks, namespaces
 * and classes are looked into (they may hold functions or inlined code). */
static int cu_walk(cu_index *x, Dwarf_Die *d, int parent, int depth)
{
    Dwarf_Die c;
    if (depth > 256 || dwarf_child(d, &c) != 0)
        return 0;
    do {
        int tag = dwarf_tag(&c), me = parent;
        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
            Dwarf_Addr base, lo, hi;
            ptrdiff_t off = 0;
            int first = 1;
            while ((off = dwarf_ranges(&c, off, &base, &lo, &hi)) > 0) {
                if (first && (me = cu_add_fn(x, &c, tag == DW_TAG_subprogram ? -1 : parent, tag)) < 0)
                    return -1;
                first = 0;
                if (lo < hi && cu_add_iv(x, lo, hi, me, depth))
                    return -1;
            }
            if (first)
                me = parent; /* a declaration or an abstract instance: no code */
        } else if (tag != DW_TAG_lexical_block && tag != DW_TAG_namespace && tag != DW_TAG_class_type &&
                   tag != DW_TAG_structure_type && tag != DW_TAG_module && tag != DW_TAG_entry_point) {
            continue;
        }
        if (cu_walk(x, &c, me, depth + 1))
            return -1;
    } while (dwarf_siblingof(&c, &c) == 0);
    return 0;
}

static int iv_cmp(const void *a, const void *b)
{
    const cu_iv *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->depth < y->depth ? -1 : (x->depth > y->depth); /* the outer one first */
}

static cu_index *cu_index_get(sym_mod *m, Dwarf_Die *cu)
{
    Dwarf_Off off = dwarf_dieoffset(cu);
    for (int i = 0; i < m->ncus; i++)
        if (m->cus[i]->off == off) {
            cu_index *hit = m->cus[i]; /* to the front: addresses of one CU come in runs */
            m->cus[i] = m->cus[0];
            m->cus[0] = hit;
            return hit;
        }
    if (m->ncus == m->capcus) {
        int cap = m->capcus ? 2 * m->capcus : 16;
        cu_index **v = realloc(m->cus, (size_t)cap * sizeof *v);
        if (!v)
            return NULL;
        m->cus = v;
        m->capcus = cap;
    }
    cu_index *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->off = off;
    if (cu_walk(x, cu, -1, 0)) {
        free(x->fn);
        free(x->iv);
        free(x);
        return NULL;
    }
    qsort(x->iv, x->niv, sizeof *x->iv, iv_cmp);
    m->cus[m->ncus] = m->cus[0];
    m->cus[0] = x;
    m->ncus++;
    return x;
}

static void cu_index_free(cu_index *x)
{
    free(x->fn);
    free(x->iv);
    free(x);
}

static int resolve_dwarf(sym_mod *m, Dwarf_Addr a, frames *f, const char *file, int line)
{
    Dwarf_Addr bias = 0;
    Dwarf_Die *cu = dwfl_module_addrdie(m->m, a, &bias);
    cu_index *x = cu ? cu_index_get(m, cu) : NULL;
    if (!x)
        return 0;
    Dwarf_Addr pc = a - bias;
    size_t lo = 0, hi = x->niv; /* first interval starting after pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->iv[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    int fn = -1;
    for (size_t i = lo; i-- > 0;)
        if (pc < x->iv[i].hi) {
            fn = x->iv[i].fn;
            break;
        }
    Dwarf_Files *files = NULL;
    size_t nfiles = 0;
    for (int guard = 0; fn >= 0 && guard < 64; guard++) {
        cu_fn *e = &x->fn[fn];
        const char *name = die_name(&e->die);
        if (frames_push(f, name ? name : "?", file, line))
            return -1;
        if (e->tag == DW_TAG_subprogram)
            break;
        /* where the inlined code is called from, in the function above */
        Dwarf_Attribute at;
        Dwarf_Word v = 0;
        line = dwarf_formudata(dwarf_attr(&e->die, DW_AT_call_line, &at), &v) == 0 ? (int)v : 0;
        file = NULL;
        if (dwarf_formudata(dwarf_attr(&e->die, DW_AT_call_file, &at), &v) == 0 &&
            (files || dwarf_getsrcfiles(cu, &files, &nfiles) == 0) && v < nfiles)
            file = dwarf_filesrc(files, v, NULL, NULL);
        fn = e->parent;
    }
    return 0;
}

static int resolve(xsm_symbols *s, sym_entry *e)
{
    sym_mod *m = &s->mods[e->mod];
    if (m->state == MOD_UNOPENED)
        mod_open(m);
    frames f = {NULL, 0, 0};
    Dwarf_Addr a = e->ret && e->addr ? e->addr - 1 : e->addr;
    const char *file = NULL;
    int line = 0;
    if (m->state == MOD_OPEN) {
        Dwfl_Line *l = dwfl_module_getsrc(m->m, a);
        if (l)
            file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
        else
            m->no_lines = 1;
        if (resolve_dwarf(m, a, &f, file, line)) {
            free(f.v);
            return -1;
        }
        if (!f.n) { /* no DWARF for it: the symbol table */
            GElf_Off off = 0;
            GElf_Sym sym;
            const char *name = dwfl_module_addrinfo(m->m, a, &off, &sym, NULL, NULL, NULL);
            if (name && frames_push(&f, demangle(s, name), file, line)) {
                free(f.v);
                return -1;
            }
        }
    }
    e->loc.symbolized = f.n > 0;
    if (!f.n) {
        if (m->state == MOD_OPEN)
            m->no_symbols = 1;
        char buf[600];
        snprintf(buf, sizeof buf, "%s+0x%" PRIx64, m->base, e->addr);
        char *txt = strdup(buf);
        if (!txt || frames_push(&f, txt, NULL, 0)) {
            free(txt);
            free(f.v);
            return -1;
        }
    }
    e->loc.module = m->path;
    e->loc.addr = e->addr;
    e->loc.nframes = f.n;
    e->loc.frames = f.v;
    s->resolved++;
    return 0;
}

static int fn_cmp(const void *a, const void *b)
{
    const fn_sym *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Module m's defined functions, sorted by name (once): 0, or -1. */
static int fns_index(xsm_symbols *s, sym_mod *m)
{
    m->fns_done = 1;
    int n = m->state == MOD_OPEN ? dwfl_module_getsymtab(m->m) : 0;
    if (n <= 0)
        return 0;
    if (!(m->fns = malloc((size_t)n * sizeof *m->fns)))
        return -1;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        const char *name = dwfl_module_getsym_info(m->m, i, &sym, &addr, NULL, NULL, NULL);
        if (name && *name && GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_shndx != SHN_UNDEF)
            m->fns[m->nfns++] = (fn_sym){demangle(s, name), addr};
    }
    qsort(m->fns, m->nfns, sizeof *m->fns, fn_cmp);
    return 0;
}

int xsm_symbols_function(xsm_symbols *s, int h, const char *name, uint64_t *addr)
{
    if (!s || h < 0 || h >= s->nmods || !name)
        return -1;
    sym_mod *m = &s->mods[h];
    if (m->state == MOD_UNOPENED)
        mod_open(m);
    if (!m->fns_done && fns_index(s, m))
        return -1;
    size_t lo = 0, hi = m->nfns;
    while (lo < hi) { /* the first of that name: the lowest address */
        size_t mid = (lo + hi) / 2;
        if (strcmp(m->fns[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == m->nfns || strcmp(m->fns[lo].name, name))
        return -1;
    *addr = m->fns[lo].addr;
    return 0;
}

static size_t bucket_of(const xsm_symbols *s, int mod, uint64_t addr, int ret)
{
    uint64_t h = (addr ^ ((uint64_t)(unsigned)mod << 48) ^ (uint64_t)ret) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) & (s->nbuckets - 1);
}

static void grow(xsm_symbols *s)
{
    size_t nb = s->nbuckets * 2;
    sym_entry **t = calloc(nb, sizeof *t);
    if (!t)
        return; /* longer chains, still correct */
    sym_entry **old = s->table;
    size_t onb = s->nbuckets;
    s->table = t;
    s->nbuckets = nb;
    for (size_t b = 0; b < onb; b++)
        for (sym_entry *e = old[b], *n; e; e = n) {
            n = e->next;
            size_t k = bucket_of(s, e->mod, e->addr, e->ret);
            e->next = t[k];
            t[k] = e;
        }
    free(old);
}

const xsm_loc *xsm_symbols_lookup(xsm_symbols *s, int h, uint64_t addr, int ret)
{
    if (!s || h < 0 || h >= s->nmods)
        return NULL;
    ret = ret != 0;
    size_t b = bucket_of(s, h, addr, ret);
    for (sym_entry *e = s->table[b]; e; e = e->next)
        if (e->addr == addr && e->mod == h && e->ret == ret)
            return &e->loc;
    sym_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->addr = addr;
    e->mod = h;
    e->ret = ret;
    if (resolve(s, e)) {
        free(e);
        return NULL;
    }
    e->next = s->table[b];
    s->table[b] = e;
    if (++s->nentries > 2 * s->nbuckets)
        grow(s);
    return &e->loc;
}

size_t xsm_symbols_notes(const xsm_symbols *s, void (*fn)(void *user, const char *note), void *user)
{
    size_t n = 0;
    char buf[1200];
    for (int i = 0; s && i < s->nmods; i++) {
        const sym_mod *m = &s->mods[i];
        buf[0] = 0;
        if (m->state == MOD_MISSING)
            snprintf(buf, sizeof buf, "%s: not found on this machine (addresses shown as %s+0xOFFSET): merge where "
                     "the run's files are, or install its debug file (/usr/lib/debug/.build-id/)", m->path, m->base);
        else if (m->state == MOD_CHANGED)
            snprintf(buf, sizeof buf, "%s: the file changed since the run (build-id %s differs) and no debug file for "
                     "that build-id was found: addresses shown as %s+0xOFFSET", m->path, m->build_id, m->base);
        else if (m->no_symbols)
            snprintf(buf, sizeof buf, "%s: stripped, no symbols (addresses shown as %s+0xOFFSET): install its debug "
                     "package (Debian: the -dbgsym package) or rebuild it with -g", m->path, m->base);
        else if (m->no_lines)
            snprintf(buf, sizeof buf, "%s: no line information (functions only): install its debug package (Debian: "
                     "the -dbgsym package) or rebuild it with -g", m->path);
        if (buf[0]) {
            n++;
            if (fn)
                fn(user, buf);
        }
    }
    return n;
}

uint64_t xsm_symbols_resolved(const xsm_symbols *s) { return s ? s->resolved : 0; }

/* ---- sharing a cache (xsm_symbols_save / _load) ------------------------------
 * A length-prefixed string: u32 length (UINT32_MAX: NULL), the bytes. */
static int put_str(FILE *f, const char *v)
{
    uint32_t n = v ? (uint32_t)strlen(v) : UINT32_MAX;
    return fwrite(&n, sizeof n, 1, f) != 1 || (v && n && fwrite(v, 1, n, f) != n);
}

static int get_str(FILE *f, char **v)
{
    uint32_t n;
    *v = NULL;
    if (fread(&n, sizeof n, 1, f) != 1)
        return -1;
    if (n == UINT32_MAX)
        return 0;
    if (n > (1u << 20) || !(*v = malloc((size_t)n + 1)))
        return -1;
    if (n && fread(*v, 1, n, f) != n) {
        free(*v);
        *v = NULL;
        return -1;
    }
    (*v)[n] = 0;
    return 0;
}

#define SHARE_MAGIC 0x31594d5358ull /* "XSMY1" */

int xsm_symbols_save(const xsm_symbols *s, FILE *f)
{
    uint64_t magic = SHARE_MAGIC, n = s->nentries;
    int32_t nm = s->nmods, bad = fwrite(&magic, 8, 1, f) != 1 || fwrite(&nm, 4, 1, f) != 1;
    for (int i = 0; i < s->nmods && !bad; i++) {
        const sym_mod *m = &s->mods[i];
        int32_t st = m->state < 0 ? m->state : 0; /* what another process needs not find again */
        uint8_t fl = (uint8_t)((m->no_symbols ? 1 : 0) | (m->no_lines ? 2 : 0));
        bad = put_str(f, m->path) || put_str(f, m->build_id) || fwrite(&st, 4, 1, f) != 1 || fwrite(&fl, 1, 1, f) != 1;
    }
    bad = bad || fwrite(&n, 8, 1, f) != 1;
    for (size_t b = 0; b < s->nbuckets && !bad; b++)
        for (const sym_entry *e = s->table[b]; e && !bad; e = e->next) {
            int32_t h = e->mod, nf = e->loc.nframes;
            uint8_t flags = (uint8_t)((e->ret ? 1 : 0) | (e->loc.symbolized ? 2 : 0));
            bad = fwrite(&h, 4, 1, f) != 1 || fwrite(&e->addr, 8, 1, f) != 1 || fwrite(&flags, 1, 1, f) != 1 ||
                  fwrite(&nf, 4, 1, f) != 1;
            for (int k = 0; k < nf && !bad; k++) {
                int32_t line = e->loc.frames[k].line;
                bad = put_str(f, e->loc.frames[k].function) || put_str(f, e->loc.frames[k].file) ||
                      fwrite(&line, 4, 1, f) != 1;
            }
        }
    return bad || fflush(f) ? -1 : 0;
}

int xsm_symbols_load(xsm_symbols *s, FILE *f)
{
    uint64_t magic, n = 0;
    int32_t nm;
    if (fread(&magic, 8, 1, f) != 1 || magic != SHARE_MAGIC || fread(&nm, 4, 1, f) != 1 || nm < 0 || nm > (1 << 20))
        return -1;
    int *map = malloc(((size_t)nm + 1) * sizeof *map), rc = 0;
    if (!map)
        return -1;
    for (int32_t i = 0; i < nm && !rc; i++) {
        char *path = NULL, *bid = NULL;
        int32_t st;
        uint8_t fl;
        if (get_str(f, &path) || get_str(f, &bid) || fread(&st, 4, 1, f) != 1 || fread(&fl, 1, 1, f) != 1 || !path) {
            free(path);
            free(bid);
            rc = -1;
            break;
        }
        map[i] = xsm_symbols_module(s, path, bid);
        free(path);
        free(bid);
        if (map[i] < 0) {
            rc = -1;
            break;
        }
        sym_mod *m = &s->mods[map[i]];
        if (st < 0 && m->state == MOD_UNOPENED)
            m->state = st; /* missing or changed: its notes, without looking again */
        m->no_symbols |= fl & 1;
        m->no_lines |= (fl >> 1) & 1;
    }
    if (!rc && fread(&n, 8, 1, f) != 1)
        rc = -1;
    for (uint64_t i = 0; i < n && !rc; i++) {
        int32_t h, nf;
        uint64_t addr;
        uint8_t flags;
        if (fread(&h, 4, 1, f) != 1 || fread(&addr, 8, 1, f) != 1 || fread(&flags, 1, 1, f) != 1 ||
            fread(&nf, 4, 1, f) != 1 || h < 0 || h >= nm || nf < 1 || nf > 4096 || (!(flags & 2) && nf != 1)) {
            rc = -1;
            break;
        }
        sym_entry *e = calloc(1, sizeof *e);
        xsm_frame *fr = calloc((size_t)nf, sizeof *fr);
        if (!e || !fr) {
            free(e);
            free(fr);
            rc = -1;
            break;
        }
        e->addr = addr;
        e->mod = map[h];
        e->ret = flags & 1;
        e->loc.symbolized = (flags >> 1) & 1;
        e->loc.module = s->mods[e->mod].path;
        e->loc.addr = addr;
        e->loc.nframes = nf;
        e->loc.frames = fr;
        for (int k = 0; k < nf && !rc; k++) {
            char *fn = NULL, *file = NULL;
            int32_t line;
            if (get_str(f, &fn) || get_str(f, &file) || fread(&line, 4, 1, f) != 1 || !fn) {
                free(fn);
                free(file);
                rc = -1;
                break;
            }
            /* an entry without symbols owns its one name (entry_free) */
            fr[k].function = e->loc.symbolized ? own(s, fn) : fn;
            fr[k].file = file ? own(s, file) : NULL;
            fr[k].line = line;
            if (!fr[k].function || (file && !fr[k].file))
                rc = -1;
        }
        size_t b = bucket_of(s, e->mod, e->addr, e->ret);
        const sym_entry *have = s->table[b];
        while (have && !(have->addr == e->addr && have->mod == e->mod && have->ret == e->ret))
            have = have->next;
        if (rc || have) { /* known already: this one goes */
            if (!e->loc.symbolized)
                free((char *)fr[0].function);
            free(fr);
            free(e);
            continue;
        }
        e->next = s->table[b];
        s->table[b] = e;
        if (++s->nentries > 2 * s->nbuckets)
            grow(s);
    }
    free(map);
    return rc;
}
