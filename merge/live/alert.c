/* merge/live/alert.c — the thresholds of --alert: "wait>50%", "mpi>30%",
 * "region:NAME>200ms" (its mean time per call on a rank), "rss>8GB" (the
 * memory high-water mark of a rank, XSPROF_MEMORY). Owner: merge live view. */
#include "merge/live/live.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "200ms" -> seconds, "8GB" -> bytes, "50%" -> 50; -1 malformed. */
static double alert_value(const char *s, int what)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || !(v >= 0) || !isfinite(v))
        return -1;
    static const struct { const char *u; double m; int what; } units[] = {
        {"%", 1, XSM_ALERT_WAIT}, {"%", 1, XSM_ALERT_MPI}, {"s", 1, XSM_ALERT_REGION},
        {"ms", 1e-3, XSM_ALERT_REGION}, {"us", 1e-6, XSM_ALERT_REGION}, {"ns", 1e-9, XSM_ALERT_REGION},
        {"B", 1, XSM_ALERT_RSS}, {"KB", 1024.0, XSM_ALERT_RSS}, {"MB", 1048576.0, XSM_ALERT_RSS},
        {"GB", 1073741824.0, XSM_ALERT_RSS}, {"TB", 1099511627776.0, XSM_ALERT_RSS},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (units[i].what == what && !strcmp(end, units[i].u))
            return v * units[i].m;
    return -1;
}

int xsm_alert_parse(const char *s, xsm_alert *a)
{
    memset(a, 0, sizeof *a);
    a->rank = -1;
    if (strlen(s) >= sizeof a->text)
        return -1;
    snprintf(a->text, sizeof a->text, "%s", s);
    const char *gt = strrchr(s, '>');
    if (!gt || gt == s)
        return -1;
    size_t klen = (size_t)(gt - s);
    if (klen == 4 && !strncmp(s, "wait", 4))
        a->what = XSM_ALERT_WAIT;
    else if (klen == 3 && !strncmp(s, "mpi", 3))
        a->what = XSM_ALERT_MPI;
    else if (klen == 3 && !strncmp(s, "rss", 3))
        a->what = XSM_ALERT_RSS;
    else if (klen > 7 && klen - 7 < sizeof a->region && !strncmp(s, "region:", 7)) {
        a->what = XSM_ALERT_REGION;
        memcpy(a->region, s + 7, klen - 7);
        a->region[klen - 7] = 0;
    } else
        return -1;
    a->limit = alert_value(gt + 1, a->what);
    return a->limit < 0 ? -1 : 0;
}
