/* A forked child that keeps recording must not write into the parent's
 * journal (the mappings are shared): the parent's data holds exactly its
 * own regions, undamaged. */
#include <sys/wait.h>
#include <unistd.h>
#include <xsprof/xsprof.h>
#include "memsink.h"

int main(void) {
    memsink_install();
    for (int i = 0; i < 100; i++) {
        XSPROF_SCOPE("parent");
    }
    pid_t pid = fork();
    if (pid == 0) {
        for (int i = 0; i < 1000; i++) {
            XSPROF_SCOPE("child");
            xsprof_region_begin("child api");
            xsprof_region_end();
        }
        _exit(xsprof_session_active() ? 1 : 0);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < 100; i++) {
        XSPROF_SCOPE("parent");
    }
    CHECK(xsprof_finalize() == XSPROF_OK);
    CHECK(memsink_loaded);
    CHECK(memsink_count_regions("parent") == 200);
    CHECK(memsink_count_regions("child") == 0 && memsink_count_regions("child api") == 0);
    if (memsink_data.truncated)
        fprintf(stderr, "end state %s\n", memsink_data.end_state);
    CHECK(!memsink_data.truncated);
    printf("test_fork: parent 200 regions, child 0, journal intact\n");
    return 0;
}
