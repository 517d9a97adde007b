/* merge/live/http.c — the dashboard over HTTP with GNU libmicrohttpd: the
 * page (live_page.c, made at build time from live_page.html with Chart.js),
 * GET /api/snapshot (the latest snapshot) and GET /api/events (the same,
 * pushed once a second as Server-Sent Events). Every request needs the
 * token; only GET; nothing is read from disk here (the routes are fixed
 * strings, so no path can reach a file). The HTTP threads only copy the
 * snapshot the view published: they never touch the analysis.
 * Owner: merge live view. */
#include "merge/live/http.h"
#include "xsprof_config.h"

#if XSPROF_HAVE_MICROHTTPD
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNECTIONS 64
#define MAX_PER_IP 32
#define CONN_MEMORY (64 * 1024) /* a request's headers and URL must fit */

struct xsm_live_http {
    struct MHD_Daemon *d;
    int fd;
    char token[33];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    char *snap; /* the latest snapshot, one line of JSON */
    size_t snap_len;
    uint64_t version;
    int stopping;
};

/* One SSE stream: the message being sent and how far. */
typedef struct sse {
    xsm_live_http *h;
    uint64_t version;
    char *msg;
    size_t len, off;
} sse;

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    sse *s = cls;
    if (s->off == s->len) { /* the next snapshot: wait for one newer than the last sent */
        xsm_live_http *h = s->h;
        pthread_mutex_lock(&h->mu);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 2;
        while (!h->stopping && h->version == s->version &&
               pthread_cond_timedwait(&h->cv, &h->mu, &until) != ETIMEDOUT)
            ;
        int stop = h->stopping;
        char *msg = NULL;
        size_t len = 0;
        if (!stop && h->version != s->version && h->snap && (msg = malloc(h->snap_len + 16))) {
            len = (size_t)snprintf(msg, h->snap_len + 16, "data: %s\n\n", h->snap);
            s->version = h->version;
        }
        pthread_mutex_unlock(&h->mu);
        if (stop)
            return MHD_CONTENT_READER_END_OF_STREAM;
        free(s->msg);
        s->msg = msg;
        s->off = 0;
        s->len = len;
        if (!msg) { /* nothing new in 2 s: a comment keeps proxies from closing the stream */
            static const char ping[] = ": ping\n\n";
            memcpy(buf, ping, max < sizeof ping - 1 ? max : sizeof ping - 1);
            return (ssize_t)(max < sizeof ping - 1 ? max : sizeof ping - 1);
        }
    }
    size_t n = s->len - s->off < max ? s->len - s->off : max;
    memcpy(buf, s->msg + s->off, n);
    s->off += n;
    return (ssize_t)n;
}

static void sse_free(void *cls)
{
    sse *s = cls;
    free(s->msg);
    free(s);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *type, const char *body, size_t len,
                             enum MHD_ResponseMemoryMode mode)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, mode);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                            "connect-src 'self'; img-src data:");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result fail(struct MHD_Connection *c, unsigned code, const char *msg)
{
    return reply(c, code, "text/plain; charset=utf-8", msg, strlen(msg), MHD_RESPMEM_PERSISTENT);
}

/* Constant time: the comparison tells nothing about how much matched. */
static int token_ok(const char *given, const char *token)
{
    if (!given || strlen(given) != strlen(token))
        return 0;
    unsigned char d = 0;
    for (size_t i = 0; token[i]; i++)
        d |= (unsigned char)(given[i] ^ token[i]);
    return d == 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
    (void)version;
    (void)upload;
    xsm_live_http *h = cls;
    if (!*con_cls) { /* first call: headers only; a body is refused below */
        *con_cls = (void *)1;
        return MHD_YES;
    }
    if (*upload_size) {
        *upload_size = 0; /* read and dropped: no route takes a body */
        return MHD_YES;
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return fail(c, MHD_HTTP_METHOD_NOT_ALLOWED, "read-only: GET only\n");
    if (!token_ok(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "token"), h->token))
        return fail(c, MHD_HTTP_FORBIDDEN, "forbidden: the URL needs the token xsmerge --live printed\n");
    int page = !strcmp(url, "/");
    if (page || !strcmp(url, "/api/snapshot")) { /* the page carries the snapshot, drawn at once */
        size_t pre = page ? xsm_live_page_head_len : 0, post = page ? xsm_live_page_tail_len : 0;
        pthread_mutex_lock(&h->mu);
        size_t n = h->snap ? h->snap_len : 0;
        char *body = (h->snap || page) ? malloc(pre + n + post + 1) : NULL;
        if (body) {
            memcpy(body, xsm_live_page_head, pre);
            memcpy(body + pre, h->snap ? h->snap : "", n);
            memcpy(body + pre + n, xsm_live_page_tail, post);
        }
        pthread_mutex_unlock(&h->mu);
        if (!body)
            return fail(c, MHD_HTTP_SERVICE_UNAVAILABLE, "no snapshot yet\n");
        return reply(c, MHD_HTTP_OK, page ? "text/html; charset=utf-8" : "application/json", body, pre + n + post,
                     MHD_RESPMEM_MUST_FREE);
    }
    if (!strcmp(url, "/api/events")) {
        sse *s = calloc(1, sizeof *s);
        if (!s)
            return MHD_NO;
        s->h = h;
        struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, sse_read, s, sse_free);
        if (!r) {
            free(s);
            return MHD_NO;
        }
        MHD_add_response_header(r, "Content-Type", "text/event-stream");
        MHD_add_response_header(r, "Cache-Control", "no-store");
        enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ret;
    }
    return fail(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

/* The listening socket is ours, so that a port in use is said as such. */
static int listen_on(const char *bind_addr, int port, int *bound, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    socklen_t sl;
    int fam;
    struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, bind_addr, &a4->sin_addr) == 1) {
        fam = a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        sl = sizeof *a4;
    } else if (inet_pton(AF_INET6, bind_addr, &a6->sin6_addr) == 1) {
        fam = a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        sl = sizeof *a6;
    } else {
        snprintf(err, errlen, "xsmerge: --live: --bind %s is not an IPv4 or IPv6 address", bind_addr);
        return -1;
    }
    int fd = socket(fam, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, (struct sockaddr *)&ss, sl) != 0 || listen(fd, 64) != 0) {
        snprintf(err, errlen, "xsmerge: --live: cannot listen on %s port %d: %s", bind_addr, port, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *bound = ntohs(fam == AF_INET ? a4->sin_port : a6->sin6_port);
    return fd;
}

int xsm_live_http_start(const char *bind_addr, int port, xsm_live_http **out, int *bound_port, char *err,
                        size_t errlen)
{
    *out = NULL;
    xsm_live_http *h = calloc(1, sizeof *h);
    if (!h)
        return xsm_err_set(err, errlen, "xsmerge: --live: out of memory");
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        free(h);
        return xsm_err_set(err, errlen, "xsmerge: --live: no random bytes for the token: %s", strerror(errno));
    }
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(h->token + 2 * i, 3, "%02x", rnd[i]);
    pthread_mutex_init(&h->mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    h->fd = listen_on(bind_addr, port, bound_port, err, errlen);
    if (h->fd < 0) {
        xsm_live_http_stop(h);
        return 1;
    }
    h->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL,
                            on_request, h, MHD_OPTION_LISTEN_SOCKET, h->fd, MHD_OPTION_CONNECTION_LIMIT,
                            (unsigned)MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)MAX_PER_IP,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONN_MEMORY, MHD_OPTION_CONNECTION_TIMEOUT,
                            (unsigned)30, MHD_OPTION_END);
    if (!h->d) {
        xsm_live_http_stop(h);
        return xsm_err_set(err, errlen, "xsmerge: --live: libmicrohttpd did not start on %s port %d", bind_addr,
                           *bound_port);
    }
    *out = h;
    return 0;
}

const char *xsm_live_http_token(const xsm_live_http *h) { return h->token; }

void xsm_live_http_publish(xsm_live_http *h, const char *json)
{
    size_t n = strlen(json);
    while (n && json[n - 1] == '\n') /* one SSE data line */
        n--;
    char *copy = malloc(n + 1);
    if (!copy)
        return; /* the previous snapshot stays */
    memcpy(copy, json, n);
    copy[n] = 0;
    pthread_mutex_lock(&h->mu);
    free(h->snap);
    h->snap = copy;
    h->snap_len = n;
    h->version++;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

void xsm_live_http_stop(xsm_live_http *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->mu);
    h->stopping = 1;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (h->d)
        MHD_stop_daemon(h->d);
    if (h->fd >= 0)
        close(h->fd);
    pthread_mutex_destroy(&h->mu);
    pthread_cond_destroy(&h->cv);
    free(h->snap);
    free(h);
}
#endif
