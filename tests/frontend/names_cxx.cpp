// tests/frontend/names_cxx.cpp — the names scopes record, from C++:
// XSPROF_FUNCTION() in methods of two classes with the same method name, a
// lambda, a template, an operator, a constructor; XSPROF_SCOPE on
// std::string::c_str() in a loop. check_names.py compares the rank file
// with the expected counts.
#include <cstdio>
#include <string>
#include <vector>
#include <xsprof/xsprof.h>

namespace net {
struct Encoder {
    Encoder() { XSPROF_FUNCTION(); }
    int forward(int x) const { XSPROF_FUNCTION(); return x + 1; }
    bool operator<(const Encoder &) const { XSPROF_FUNCTION(); return false; }
};
struct Decoder {
    int forward(int x) const { XSPROF_FUNCTION(); return x - 1; }
};
template <class T> std::vector<T> repeat(T v) { XSPROF_FUNCTION(); return std::vector<T>(2, v); }
int outer(int a) {
    auto l = [a](double d) { XSPROF_FUNCTION(); return a + static_cast<int>(d); };
    return l(1.0);
}
} // namespace net

int main() {
    net::Encoder e;
    net::Decoder d;
    int acc = 0;
    for (int i = 0; i < 2; i++) {
        acc += e.forward(i) + d.forward(i) + net::outer(i);
        acc += static_cast<int>(net::repeat(i).size() + net::repeat(0.5).size());
        acc += (e < e) ? 1 : 0;
    }
    const char *ops[] = {"aten::add", "aten::mul", "aten::conv2d"};
    for (int i = 0; i < 6; i++) {
        std::string op = ops[i % 3];
        XSPROF_SCOPE(op.c_str());
    }
    std::printf("names_cxx done %d\n", acc);
    return xsprof_finalize() == XSPROF_OK ? 0 : 1;
}
