/* merge/live/http.h — the live view's HTTP server (http.c, libmicrohttpd;
 * built only when XSPROF_HAVE_MICROHTTPD). Owner: merge live view. */
#ifndef XSPROF_MERGE_LIVE_HTTP_H
#define XSPROF_MERGE_LIVE_HTTP_H

#include <stddef.h>
#include "merge/util.h"

typedef struct xsm_live_http xsm_live_http;
/* Listen on bind_addr:port (0: any free port, *bound_port says which) with
 * a new random token. 0, or 1 with err set (a port in use says so). */
int xsm_live_http_start(const char *bind_addr, int port, xsm_live_http **out, int *bound_port, char *err,
                        size_t errlen);
const char *xsm_live_http_token(const xsm_live_http *h);
/* The snapshot the requests get from now on (copied). */
void xsm_live_http_publish(xsm_live_http *h, const char *json);
void xsm_live_http_stop(xsm_live_http *h);

/* The page (live_page.c, generated at build time): head, the snapshot, tail. */
extern const char xsm_live_page_head[], xsm_live_page_tail[];
extern const size_t xsm_live_page_head_len, xsm_live_page_tail_len;

#endif
