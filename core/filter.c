/* core/filter.c — XSPROF_FILTER: comma-separated globs; "-glob" excludes,
 * "glob" or "+glob" includes. With any include, only included names are
 * recorded. Evaluated once per name at intern time (intern.c). */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define MAX_PATTERNS 64
static char *g_pat[MAX_PATTERNS];
static int g_exclude[MAX_PATTERNS];
static int g_npat, g_ninclude;

xsprof_status xsprof_filter_parse(const char *spec) {
    for (int i = 0; i < g_npat; i++)
        free(g_pat[i]);
    g_npat = g_ninclude = 0;
    if (!spec)
        return XSPROF_OK;
    const char *p = spec;
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *q = p;
        int ex = 0;
        if (n && (*q == '-' || *q == '+')) {
            ex = *q == '-';
            q++;
            n--;
        }
        if (n == 0 || n > XSPROF_NAME_MAX || g_npat == MAX_PATTERNS) {
            for (int i = 0; i < g_npat; i++)
                free(g_pat[i]);
            g_npat = g_ninclude = 0;
            return XSPROF_ERR_INVALID;
        }
        char *pat = strndup(q, n);
        if (!pat)
            return XSPROF_ERR_NOMEM;
        g_pat[g_npat] = pat;
        g_exclude[g_npat++] = ex;
        g_ninclude += !ex;
        p = q + n;
        if (*p == ',')
            p++;
    }
    return XSPROF_OK;
}

int xsprof_filter_active(void) { return g_npat > 0; }

int xsprof_filter_excludes(const char *name) {
    int included = g_ninclude == 0;
    for (int i = 0; i < g_npat; i++) {
        if (fnmatch(g_pat[i], name, 0) != 0)
            continue;
        if (g_exclude[i])
            return 1;
        included = 1;
    }
    return !included;
}
