/* tests/frontend/names_c.c — the names scopes record, from C: a name built
 * at run time in one reused buffer (recorded each time, not the first one
 * cached per site), a literal passed through an inline function inlined
 * with two literals, XSPROF_FUNCTION() and two scopes on one line.
 * check_names.py compares the rank file with the expected counts. */
#include <stdio.h>
#include <xsprof/xsprof.h>

static inline void named(const char *name) { XSPROF_SCOPE(name); }

static void c_function(void) { XSPROF_FUNCTION(); }

int main(void) {
    char op[32];
    const char *ops[] = {"aten::add", "aten::mul", "aten::conv2d"};
    for (int i = 0; i < 6; i++) {
        snprintf(op, sizeof op, "%s", ops[i % 3]);
        XSPROF_SCOPE(op);
    }
    for (int i = 0; i < 2; i++) {
        named("inline_a");
        named("inline_b");
        c_function();
    }
    for (int i = 0; i < 3; i++) {
        XSPROF_SCOPE("literal_outer"); XSPROF_SCOPE("literal_inner");
    }
    printf("names_c done\n");
    return xsprof_finalize() == XSPROF_OK ? 0 : 1;
}
