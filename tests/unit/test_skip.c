/* Regions that are not recorded (session stopped, name filtered out by
 * XSPROF_FILTER=-quiet*, set by the test) cost no call: they only count in
 * the thread's xsprof_skip_. Checks that begins and ends stay paired however
 * the session changes in between, that recorded regions keep the program's
 * nesting depth and their arguments, that arguments of a skipped region are
 * refused, and that the exported functions (dlsym, other languages) behave
 * exactly like the inline macros. */
#include <xsprof/xsprof.h>
#include "memsink.h"

typedef xsprof_status (*begin_fn)(xsprof_name_id);
typedef xsprof_status (*end_fn)(void);

static const xsprof_io_region *find(const char *name) {
    const xsprof_io_region *hit = NULL;
    for (size_t i = 0; i < memsink_data.nregions; i++)
        if (!strcmp(xsprof_rank_data_string(&memsink_data, memsink_data.regions[i].name), name)) {
            CHECK(!hit); /* each name once */
            hit = &memsink_data.regions[i];
        }
    return hit;
}

/* One scenario, through the inline macros (fn == NULL) or the exported functions. */
static void scenario(const char *tag, begin_fn begin, end_fn end) {
    char n[64];
    xsprof_name_id stopped_id, quiet_id, id;
    snprintf(n, sizeof n, "stopped_%s", tag);
    CHECK(xsprof_name_intern(n, &stopped_id) == XSPROF_OK);
    snprintf(n, sizeof n, "quiet_%s", tag);
    CHECK(xsprof_name_intern(n, &quiet_id) == XSPROF_OK);
    CHECK(quiet_id & XSPROF_NAME_FILTERED_);
    CHECK(!(stopped_id & XSPROF_NAME_FILTERED_));
#define BEGIN(i) (begin ? begin(i) : xsprof_region_begin_id(i))
#define END() (end ? end() : xsprof_region_end())

    /* begun stopped, a recorded region inside after start, ended running */
    CHECK(xsprof_session_stop() == XSPROF_OK);
    CHECK(BEGIN(stopped_id) == XSPROF_ERR_DISABLED);
    CHECK(xsprof_region_arg_int("k", 1) == XSPROF_ERR_DISABLED);
    CHECK(xsprof_session_start() == XSPROF_OK);
    snprintf(n, sizeof n, "inside_stopped_%s", tag);
    CHECK(xsprof_name_intern(n, &id) == XSPROF_OK);
    CHECK(BEGIN(id) == XSPROF_OK);
    CHECK(xsprof_region_arg_int("k", 7) == XSPROF_OK);
    CHECK(END() == XSPROF_OK);
    CHECK(END() == XSPROF_OK); /* the stopped one */

    /* begun running, a stopped one inside, both ended while stopped */
    snprintf(n, sizeof n, "outer_%s", tag);
    CHECK(xsprof_name_intern(n, &id) == XSPROF_OK);
    CHECK(BEGIN(id) == XSPROF_OK);
    CHECK(xsprof_session_stop() == XSPROF_OK);
    CHECK(BEGIN(stopped_id) == XSPROF_ERR_DISABLED);
    CHECK(END() == XSPROF_OK);
    CHECK(END() == XSPROF_OK); /* outer: recorded, it began running */
    CHECK(xsprof_session_start() == XSPROF_OK);

    /* filtered out, with a recorded child */
    CHECK(BEGIN(quiet_id) == XSPROF_OK);
    CHECK(xsprof_region_arg_int("k", 2) == XSPROF_ERR_DISABLED);
    snprintf(n, sizeof n, "child_%s", tag);
    CHECK(xsprof_name_intern(n, &id) == XSPROF_OK);
    CHECK(BEGIN(id) == XSPROF_OK);
    CHECK(END() == XSPROF_OK);
    CHECK(END() == XSPROF_OK);
#undef BEGIN
#undef END
}

/* XSPROF_SCOPE while the session is stopped begins nothing at all (the
 * inline check returns before the skip count): an argument given inside it
 * is refused as disabled, as in a skipped region, not counted as misuse
 * ("region argument outside a region", a warning per call). */
static void scope_stopped(void) {
    CHECK(xsprof_session_stop() == XSPROF_OK);
    {
        XSPROF_SCOPE("scope_stopped");
        CHECK(xsprof_region_arg_int("k", 3) == XSPROF_ERR_DISABLED);
    }
    CHECK(xsprof_session_start() == XSPROF_OK);
}

int main(void) {
    memsink_install();
    scenario("inline", NULL, NULL);
    scenario("exported", &xsprof_region_begin_id, &xsprof_region_end);
    scope_stopped();
    CHECK(xsprof_region_end() == XSPROF_ERR_UNBALANCED); /* everything above was balanced */
    CHECK(xsprof_finalize() == XSPROF_OK);
    CHECK(memsink_loaded);
    const char *tags[] = {"inline", "exported"};
    for (int i = 0; i < 2; i++) {
        char n[64];
        snprintf(n, sizeof n, "stopped_%s", tags[i]);
        CHECK(find(n) == NULL);
        snprintf(n, sizeof n, "quiet_%s", tags[i]);
        CHECK(find(n) == NULL);
        snprintf(n, sizeof n, "inside_stopped_%s", tags[i]);
        const xsprof_io_region *r = find(n);
        CHECK(r && r->depth == 1 && r->nargs == 1); /* nested in the skipped region */
        CHECK(memsink_data.args[r->args].i == 7);
        snprintf(n, sizeof n, "outer_%s", tags[i]);
        CHECK((r = find(n)) && r->depth == 0 && r->nargs == 0);
        snprintf(n, sizeof n, "child_%s", tags[i]);
        CHECK((r = find(n)) && r->depth == 1);
    }
    CHECK(find("scope_stopped") == NULL);
    CHECK(memsink_data.anomalies == 1); /* the deliberate end without begin only */
    printf("test_skip: ok (%zu regions)\n", memsink_data.nregions);
    return 0;
}
