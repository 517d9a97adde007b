// tests/frontend/cxx_api.cpp — the C++ API (xsprof.hpp) as a user writes it,
// compiled with -Wall -Wextra -Werror -pedantic as C++14 and C++17: RAII
// scopes from std::string / string_view / literals, typed arguments and
// shapes from containers, observers from capturing lambdas, several scopes
// on one line, moved scopes, and exceptions unwinding through scopes (RAII,
// XSPROF_SCOPE and XSPROF_FUNCTION). check_cxx_api.py reads the rank file.
#include <xsprof/xsprof.hpp>

#include <array>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace app {
struct Layer {
    void forward(int depth) const {
        XSPROF_FUNCTION();
        xsprof::scope inner(std::string("layer_body"));
        if (depth == 0)
            throw std::runtime_error("boom");
        forward(depth - 1);
    }
};
} // namespace app

static xsprof::scope make_scope(const std::string &name) { return xsprof::scope(name); }

int main() {
    int begins = 0, ends = 0;
    long long total_ns = 0;
    xsprof::observer obs([&begins](const xsprof_region_info &) { ++begins; },
                         [&ends, &total_ns](const xsprof_region_info &r) {
                             ++ends;
                             total_ns += r.t_end - r.t_begin;
                         });
    if (obs.status() != XSPROF_OK) {
        std::printf("observer refused: %s\n", xsprof_status_string(obs.status()));
        return 1;
    }
    {
        std::string op = "aten::linear";
        xsprof::scope s(op);
        s.arg("batch", 32).arg("lr", 0.5).arg("flag", true).arg("mode", std::string("train"));
        s.arg("weight", std::vector<int>{128, 256}).arg("bias", std::array<long, 1>{{256}}).arg("x", {4, 8, 16});
    }
#if __cplusplus >= 201703L
    {
        std::string_view v = "view_name_and_more";
        xsprof::scope s(v.substr(0, 9));
        s.arg("view", v.substr(10));
    }
#endif
    { xsprof::scope a("one_line_a"); xsprof::scope b("one_line_b"); XSPROF_SCOPE("one_line_c"); XSPROF_SCOPE("one_line_d"); }
    {
        xsprof::scope moved = make_scope("moved");
        std::vector<xsprof::scope> held;
        held.push_back(std::move(moved)); // ends when the vector goes
    }
    int caught = 0;
    for (int i = 0; i < 2; i++) {
        try {
            xsprof::scope outer("try_block");
            XSPROF_SCOPE("macro_in_try");
            app::Layer().forward(2);
        } catch (const std::runtime_error &) {
            caught++;
        }
    }
    { xsprof::scope after("after_exceptions"); } // depth 0 again: every scope above ended
    if (caught != 2 || begins != ends || begins == 0) {
        std::printf("caught %d, observer saw %d begins, %d ends\n", caught, begins, ends);
        return 1;
    }
    std::printf("cxx_api done: %d regions observed, %lld ns\n", ends, total_ns);
    return xsprof_finalize() == XSPROF_OK ? 0 : 1;
}
