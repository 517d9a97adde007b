/* Communicator definitions of any size: members that do not fit one record
 * continue in COMM_MORE records, and the journal reader puts them back
 * together (a 4096-rank communicator needs four records). Sizes around the
 * record boundary, a large one, and a small one after it. */
#include <stdlib.h>
#include <xsprof/xsprof.h>
#include "core/collector.h"
#include "core/record.h"
#include "memsink.h"

int main(void) {
    memsink_install();
    const uint32_t head = (uint32_t)XSPROF_COMM_HEAD_MAX, more = (uint32_t)XSPROF_COMM_MORE_MAX;
    const uint32_t sizes[] = {0, 1, 2, head - 1, head, head + 1, head + more, head + more + 1, 4096, 3};
    const int n = (int)(sizeof sizes / sizeof *sizes);
    int32_t *m = malloc(5000 * sizeof *m);
    CHECK(m);
    for (int c = 0; c < n; c++) {
        for (uint32_t i = 0; i < sizes[c]; i++)
            m[i] = (int32_t)(7 * i + (uint32_t)c); /* distinct per communicator and position */
        CHECK(xsprof_comm_define(100 + (uint32_t)c, "test comm", 0, m, sizes[c]) == XSPROF_OK);
    }
    /* an ordinary record between definitions keeps nothing apart */
    CHECK(xsprof_region_begin("work") == XSPROF_OK);
    CHECK(xsprof_region_end() == XSPROF_OK);
    CHECK(xsprof_finalize() == XSPROF_OK);
    CHECK(memsink_loaded);
    xsprof_rank_data *d = &memsink_data;
    int found = 0;
    for (size_t k = 0; k < d->ncomms; k++) {
        const xsprof_io_comm *cm = &d->comms[k];
        if (cm->id < 100 || cm->id >= 100 + (uint32_t)n)
            continue;
        int c = (int)(cm->id - 100);
        found++;
        if (cm->size != sizes[c]) {
            fprintf(stderr, "communicator of %u members read back with %u\n", sizes[c], cm->size);
            return 1;
        }
        CHECK(cm->members + cm->size <= d->ncomm_members);
        for (uint32_t i = 0; i < cm->size; i++)
            CHECK(d->comm_members[cm->members + i] == (int32_t)(7 * i + (uint32_t)c));
    }
    CHECK(found == n);
    printf("test_comm_define: %d communicators up to 4096 members read back exactly (one record holds %u, a "
           "continuation %u)\n", n, head, more);
    free(m);
    return 0;
}
