/* A user's program built against an installed xsprof. */
#include <stdio.h>
#include <xsprof/xsprof.h>

int main(void) {
    {
        XSPROF_SCOPE("consumer work");
        xsprof_region_arg_int("answer", 42);
    }
    xsprof_status st = xsprof_finalize();
    printf("consumer: %s\n", xsprof_status_string(st));
    return st == XSPROF_OK ? 0 : 1;
}
