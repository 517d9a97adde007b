/* core/funcname.c — the name XSPROF_FUNCTION() records: the qualified name
 * of the function, compacted from the compiler's pretty name
 * (__PRETTY_FUNCTION__ in C++, __func__ in C). Return type, argument list,
 * cv/ref qualifiers and template-argument notes ([with T = int]) go; an
 * enclosing function keeps "()" so a lambda reads ns::outer()::lambda with
 * g++ (<lambda(int)>) and clang++ ((anonymous class)::operator()) alike.
 * Called once per call site (the site caches the id), never on the hot path. */
#include <string.h>
#include "internal.h"

static int ident_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$' ||
           (unsigned char)c >= 0x80;
}

/* Index just past the group opened at s[i] ((, [, < or {), all kinds nested. */
static size_t group_end(const char *s, size_t i) {
    int depth = 0;
    for (; s[i]; i++) {
        if (strchr("([<{", s[i]))
            depth++;
        else if (strchr(")]>}", s[i]) && --depth == 0)
            return i + 1;
    }
    return i;
}

/* s[i] starts the keyword `operator`: index past its symbol (operator(),
 * operator<<, operator new[], operator int...). */
static size_t operator_end(const char *s, size_t i) {
    i += 8;
    if (s[i] == '(' && s[i + 1] == ')')
        return i + 2;
    if (s[i] == ' ') { /* operator new, operator delete[], conversions */
        i++;
        while (ident_char(s[i]))
            i++;
        if (s[i] == '[' && s[i + 1] == ']')
            i += 2;
        return i;
    }
    while (s[i] && strchr("<>=!+-*/%^&|~,[]", s[i]))
        i++;
    return i;
}

static int starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

typedef struct {
    char *out;
    size_t cap, n;
} outbuf;

static void put(outbuf *o, const char *s, size_t len) {
    for (size_t k = 0; k < len && o->n + 1 < o->cap; k++)
        o->out[o->n++] = s[k];
}

size_t xsprof_funcname_compact(const char *pretty, char *out, size_t cap) {
    outbuf o = {out, cap, 0};
    if (!cap)
        return 0;
    const char *s = pretty ? pretty : "";
    size_t i = 0;
    while (s[i]) {
        char c = s[i];
        if (c == ' ') {
            if (s[i + 1] == '[') /* [with T = int] (g++), [T = int] (clang++) */
                break;
            o.n = 0; /* what came before was the return type or a specifier */
            i++;
        } else if (starts(s + i, "operator") && (i == 0 || !ident_char(s[i - 1])) && !ident_char(s[i + 8])) {
            size_t e = operator_end(s, i);
            put(&o, s + i, e - i);
            i = e;
        } else if (c == '<' && starts(s + i, "<lambda")) { /* g++: <lambda(int)> */
            put(&o, "lambda", 6);
            i = group_end(s, i);
        } else if (c == '(' && (starts(s + i, "(anonymous class)") || starts(s + i, "(lambda at "))) {
            put(&o, "lambda", 6); /* clang++: (anonymous class)::operator()(int) const */
            i = group_end(s, i);
            if (starts(s + i, "::operator()"))
                i += 12;
        } else if (c == '(' && starts(s + i, "(anonymous namespace)")) {
            size_t e = group_end(s, i);
            put(&o, s + i, e - i);
            i = e;
        } else if (c == '{' && starts(s + i, "{anonymous}")) { /* g++'s spelling of the same */
            put(&o, "(anonymous namespace)", 21);
            i += 11;
        } else if (c == '(') {
            size_t e = group_end(s, i);
            if (!starts(s + e, "::"))
                break; /* the function's own argument list: the name ends here */
            put(&o, "()", 2); /* an enclosing function's */
            i = e;
        } else if (c == '<' || c == '[') {
            size_t e = group_end(s, i);
            put(&o, s + i, e - i);
            i = e;
        } else {
            put(&o, s + i, 1);
            i++;
        }
    }
    out[o.n] = '\0';
    return o.n;
}
