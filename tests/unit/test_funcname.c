/* tests/unit/test_funcname.c — xsprof_funcname_compact on the pretty names
 * g++ 12 and clang++ 14 produce (both spellings, whichever compiler builds
 * this), and on C's plain __func__. */
#include <stdio.h>
#include <string.h>
#include "core/internal.h"

static const char *cases[][2] = {
    {"main", "main"},
    {"ns::Encoder::Encoder()", "ns::Encoder::Encoder"},
    {"void ns::Encoder::forward(int) const", "ns::Encoder::forward"},
    {"std::vector<T> ns::Encoder::make(T) [with T = double]", "ns::Encoder::make"},
    {"std::vector<T> ns::Encoder::make(T) [T = double]", "ns::Encoder::make"},
    {"bool ns::Encoder::operator<(const ns::Encoder&) const", "ns::Encoder::operator<"},
    {"bool ns::Encoder::operator<(const ns::Encoder &) const", "ns::Encoder::operator<"},
    {"void ns::Encoder::operator()(int)", "ns::Encoder::operator()"},
    {"ns::Encoder::operator()(int)::<lambda()>", "ns::Encoder::operator()()::lambda"},
    {"auto ns::Encoder::operator()(int)::(anonymous class)::operator()() const", "ns::Encoder::operator()()::lambda"},
    {"ns::outer(int)::<lambda(double)>", "ns::outer()::lambda"},
    {"auto ns::outer(int)::(anonymous class)::operator()(double) const", "ns::outer()::lambda"},
    {"auto ns::outer(int)::(lambda at x.cpp:3:5)::operator()(double) const", "ns::outer()::lambda"},
    {"std::string ns::outer(int)", "ns::outer"},
    {"static void ns::Box<T>::put(T) [with T = std::vector<int>]", "ns::Box<T>::put"},
    {"static void ns::Box<std::vector<int>>::put(T) [T = std::vector<int>]", "ns::Box<std::vector<int>>::put"},
    {"void ns::{anonymous}::anon()", "ns::(anonymous namespace)::anon"},
    {"void ns::(anonymous namespace)::anon()", "ns::(anonymous namespace)::anon"},
    {"main()::<lambda(auto:1)> [with auto:1 = int]", "main()::lambda"},
    {"auto main()::(anonymous class)::operator()(auto) const [x:auto = int]", "main()::lambda"},
    {"void* A::operator new(std::size_t)", "A::operator new"},
    {"A& A::operator<<(int) &&", "A::operator<<"},
    {"A::operator int() const", "A::operator int"},
    {"", ""},
};

int main(void) {
    int bad = 0;
    char out[1024];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        xsprof_funcname_compact(cases[i][0], out, sizeof out);
        if (strcmp(out, cases[i][1])) {
            printf("FAIL: '%s' -> '%s', expected '%s'\n", cases[i][0], out, cases[i][1]);
            bad = 1;
        }
    }
    xsprof_funcname_compact("void ns::Encoder::forward(int) const", out, 6); /* cut, terminated */
    if (strcmp(out, "ns::E")) {
        printf("FAIL: a 6-byte buffer holds '%s'\n", out);
        bad = 1;
    }
    if (!bad)
        printf("funcname: %zu pretty names compacted as expected\n", sizeof cases / sizeof *cases);
    return bad;
}
