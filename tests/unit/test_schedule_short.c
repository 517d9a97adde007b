/* Fewer steps than one active cycle needs: finalize warns with both numbers
 * (checked by the test's PASS_REGULAR_EXPRESSION). */
#include <xsprof/xsprof.h>
int main(void) {
    xsprof_schedule_set(2, 1, 3, 1, NULL, NULL);
    for (int i = 0; i < 4; i++)
        xsprof_step();
    xsprof_finalize();
    return 0;
}
