// Every public header compiles as C++ and the scope macro works there.
#include <xsprof/xsprof.h>
#include <cstdio>

static int work(int n) {
    XSPROF_FUNCTION();
    int s = 0;
    for (int i = 0; i < n; i++) {
        XSPROF_SCOPE("cxx loop body");
        s += i;
    }
    return s;
}

int main() {
    xsprof_status st = xsprof_region_arg_int("outside", 1);
    std::printf("cxx: %d %s\n", work(10), xsprof_status_string(st));
    return xsprof_finalize() == XSPROF_OK ? 0 : 1;
}
