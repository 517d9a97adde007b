#!/usr/bin/env python3
"""pmpi_wrappers/gen_wrappers.py — turn the checked-in MPI spec into code.

Inputs:  mpi_prototypes.txt (C prototypes) and mpi_roles.txt (group, kind,
         collective class and parameter roles of every function).
Outputs: ops.h / ops.c       the op table (name, group, kind, coll, rule)
         wrappers_c.c        one C wrapper per function (kind != SKIP/SPECIAL)
         wrappers_f.c        Fortran (mpif.h / use mpi) wrappers that translate
                             handles and call the C wrapper, so a call is
                             recorded once
Usage:   gen_wrappers.py SPEC_DIR OUT_DIR

The generator fills a call descriptor from the roles; what the roles mean
lives in C (mpi/call.c), not in generated strings."""
import os
import re
import sys

GROUPS = ["p2p", "coll", "rma", "io", "comm", "type", "misc"]
WKINDS = ["OTHER", "SEND", "SSEND", "RECV", "ISEND", "IRECV", "SENDRECV", "COLL", "ICOLL", "RMA", "IO",
          "PSEND", "PRECV", "START", "STARTALL", "WAIT", "REQFREE", "CANCEL", "PROBE", "MRECV", "IMRECV",
          "COMMNEW", "ICOMMNEW", "COMMFREE", "WINNEW", "WINFREE", "SPECIAL"]
COLLS = {"-": "NONE", "BARRIER": "BARRIER", "NXN": "NXN", "ONE2N": "ONE2N", "N2ONE": "N2ONE",
         "SCAN": "SCAN", "NEIGHBOR": "NEIGHBOR"}
RULES = ["barrier", "bcast", "reduce", "allreduce", "gather", "gatherv", "scatter", "scatterv", "allgather",
         "allgatherv", "alltoall", "alltoallv", "alltoallw", "redscat", "redscat_block", "scan", "exscan", "nb_allgather",
         "nb_allgatherv", "nb_alltoall", "nb_alltoallv", "nb_alltoallw", "single", "wait", "waitall", "waitany",
         "waitsome", "test", "testall", "testany", "testsome", "members"]
# role -> (descriptor field, cast, XSPROF_R_* bit or None)
ROLES = {
    "sbuf": ("sbuf", "(const void *)", "SBUF"), "rbuf": ("rbuf", "(const void *)", "RBUF"),
    "scount": ("scount", "", None), "rcount": ("rcount", "", None),
    "stype": ("stype", "", "STYPE"), "rtype": ("rtype", "", "RTYPE"),
    "scounts": ("scounts", "(const int *)", None), "sdispls": (None, "", None),
    "rcounts": ("rcounts", "(const int *)", None), "rdispls": (None, "", None),
    "stypes": ("stypes", "(const MPI_Datatype *)", None), "rtypes": ("rtypes", "(const MPI_Datatype *)", None),
    "peer": ("peer", "", "PEER"), "src": ("src", "", "SRC"), "tag": ("tag", "", None), "rtag": (None, "", None),
    "root": ("root", "", "ROOT"), "comm": ("comm", "", "COMM"), "commp": ("commp", "", None),
    "newcomm": ("newcomm", "", None), "req": ("req", "", "REQ"), "reqs": ("reqs", "", None),
    "nreq": ("nreq", "", None), "index": ("index", "", None), "indices": ("indices", "", None),
    "outcount": ("outcount", "", None), "flag": ("flag", "", "FLAG"), "status": ("status", "", "STATUS"),
    "statuses": ("statuses", "", None), "msg": ("msg", "", None), "win": ("win", "", "WIN"),
    "winp": ("winp", "", None), "newwin": ("newwin", "", None),
    # documented in the spec, not needed by the recording (no descriptor field)
    "lleader": (None, "", None), "rleader": (None, "", None), "high": (None, "", None),
}
# roles a kind cannot work without
REQUIRED = {
    "SEND": ["scount", "stype", "peer", "tag", "comm"], "SSEND": ["scount", "stype", "peer", "tag", "comm"],
    "ISEND": ["scount", "stype", "peer", "tag", "comm", "req"], "PSEND": ["scount", "stype", "peer", "tag", "comm", "req"],
    "RECV": ["rcount", "rtype", "src", "tag", "comm", "status"], "IRECV": ["src", "tag", "comm", "req"],
    "PRECV": ["src", "tag", "comm", "req"], "SENDRECV": ["scount", "stype", "peer", "tag", "src", "rtag", "comm", "status"],
    "COLL": ["comm", "rule"], "ICOLL": ["comm", "rule", "req"], "START": ["req"], "STARTALL": ["nreq", "reqs"],
    "WAIT": ["rule"], "REQFREE": ["req"], "CANCEL": ["req"], "PROBE": ["src", "tag", "comm"],
    "MRECV": ["msg", "status"], "IMRECV": ["msg", "req"], "COMMNEW": ["comm", "newcomm"],
    "ICOMMNEW": ["comm", "newcomm", "req"], "COMMFREE": ["commp"], "WINNEW": ["comm", "newwin"], "WINFREE": ["winp"],
}
HANDLES = ["MPI_Comm", "MPI_Datatype", "MPI_Op", "MPI_Group", "MPI_Info", "MPI_Win", "MPI_Errhandler",
           "MPI_Message", "MPI_File", "MPI_Request"]
F2C = {h: "PMPI_" + ("Type" if h == "MPI_Datatype" else h[4:]) for h in HANDLES}


class Param:
    def __init__(self, text):
        self.text = text
        m = re.fullmatch(r"(.*?)(\w+)((?:\[\d*\])*)", text)
        if not m or text == "...":
            self.type, self.name, self.dims = text, None, ""
            return
        self.type, self.name, self.dims = m.group(1).strip(), m.group(2), m.group(3)


class Func:
    pass


def fail(msg):
    sys.stderr.write("gen_wrappers: %s\n" % msg)
    sys.exit(1)


def lines_of(path):
    with open(path) as f:
        for no, line in enumerate(f, 1):
            line = line.strip()
            if line and not line.startswith("#"):
                yield no, line


def load(spec_dir):
    funcs = {}
    ppath = os.path.join(spec_dir, "mpi_prototypes.txt")
    for no, line in lines_of(ppath):
        m = re.fullmatch(r"(.*?)\b(MPI_\w+)\((.*)\)", line)
        if not m:
            fail("%s:%d: not a prototype: %s" % (ppath, no, line))
        f = Func()
        f.ret, f.name, args = m.group(1).strip(), m.group(2), m.group(3)
        f.proto = line
        f.params = [] if args in ("void", "") else [Param(a.strip()) for a in args.split(", ")]
        if f.name in funcs:
            fail("%s:%d: %s twice" % (ppath, no, f.name))
        funcs[f.name] = f
    rpath = os.path.join(spec_dir, "mpi_roles.txt")
    seen = set()
    for no, line in lines_of(rpath):
        cols = line.split()
        if len(cols) < 4:
            fail("%s:%d: expected name group kind coll roles..." % (rpath, no))
        name, group, kind, coll = cols[:4]
        if name not in funcs:
            fail("%s:%d: %s has no prototype in mpi_prototypes.txt" % (rpath, no, name))
        if name in seen:
            fail("%s:%d: %s twice" % (rpath, no, name))
        seen.add(name)
        f = funcs[name]
        if group not in GROUPS:
            fail("%s:%d: unknown group %s" % (rpath, no, group))
        if kind not in WKINDS + ["SKIP"]:
            fail("%s:%d: unknown kind %s" % (rpath, no, kind))
        if coll not in COLLS:
            fail("%s:%d: unknown coll %s" % (rpath, no, coll))
        f.group, f.kind, f.coll, f.roles, f.rule = group, kind, COLLS[coll], {}, None
        pnames = {p.name for p in f.params}
        for tok in cols[4:]:
            role, _, pname = tok.partition("=")
            if role == "rule":
                if pname not in RULES:
                    fail("%s:%d: unknown rule %s" % (rpath, no, pname))
                f.rule = pname
                continue
            if role not in ROLES:
                fail("%s:%d: unknown role %s" % (rpath, no, role))
            if pname not in pnames:
                fail("%s:%d: %s has no parameter %s" % (rpath, no, name, pname))
            f.roles[role] = pname
        for need in REQUIRED.get(kind, []):
            if need == "rule" and not f.rule or need != "rule" and need not in f.roles:
                fail("%s:%d: kind %s needs role %s" % (rpath, no, kind, need))
    missing = sorted(set(funcs) - seen)
    if missing:
        fail("%s: no roles line for %s" % (rpath, ", ".join(missing)))
    return [funcs[n] for n in sorted(funcs)]


HEADER = "/* Generated by pmpi_wrappers/gen_wrappers.py from mpi_prototypes.txt and\n * mpi_roles.txt. Do not edit. */\n"


def op_id(f):
    return "XSPROF_OP_" + f.name


def gen_ops(funcs, out):
    with open(os.path.join(out, "ops.h"), "w") as h:
        h.write(HEADER + "#ifndef XSPROF_PMPI_OPS_H\n#define XSPROF_PMPI_OPS_H\nenum xsprof_mpi_op_id {\n")
        for f in funcs:
            h.write("    %s,\n" % op_id(f))
        h.write("    XSPROF_OP_COUNT\n};\n#endif\n")
    with open(os.path.join(out, "ops.c"), "w") as c:
        c.write(HEADER + '#include "mpi/xsprof_mpi.h"\n#include "ops.h"\n\n')
        c.write("const xsprof_mpi_op xsprof_mpi_ops[] = {\n")
        for f in funcs:
            kind = "OTHER" if f.kind == "SKIP" else f.kind
            rule = "XSPROF_RULE_" + f.rule.upper() if f.rule else "XSPROF_RULE_NONE"
            c.write('    [%s] = {"%s", XSPROF_GRP_%s, XSPROF_W_%s, XSPROF_COLL_%s, %s},\n' %
                    (op_id(f), f.name, f.group.upper(), kind, f.coll, rule))
        c.write("};\nconst unsigned xsprof_mpi_nops = XSPROF_OP_COUNT;\n")


def call_args(f):
    return ", ".join(p.name for p in f.params)


def impl_proto(f):
    """The recording body of a C wrapper: the MPI prototype with the call
    site in front (xsprof_w_MPI_X). The exported MPI_X passes its own return
    address; a Fortran binding passes its caller's."""
    params = ", ".join(p.text for p in f.params)
    return "%s xsprof_w_%s(const void *xs_site%s)" % (f.ret, f.name, ", " + params if params else "")


def impl_call(f, site):
    args = call_args(f)
    return "xsprof_w_%s(%s%s)" % (f.name, site, ", " + args if args else "")


def wrapped(funcs):
    return [f for f in funcs if f.kind not in ("SKIP", "SPECIAL")]


def gen_c(funcs, out):
    with open(os.path.join(out, "wrappers.h"), "w") as h:
        h.write(HEADER + "#ifndef XSPROF_PMPI_WRAPPERS_H\n#define XSPROF_PMPI_WRAPPERS_H\n")
        h.write('#include "mpi/xsprof_mpi.h"\n')
        for f in wrapped(funcs):
            h.write("XSPROF_HIDDEN %s;\n" % impl_proto(f))
        h.write("#endif\n")
    with open(os.path.join(out, "wrappers_c.c"), "w") as o:
        o.write(HEADER)
        o.write("/* Deprecated MPI-2.0 functions are part of the interface we wrap. */\n")
        o.write('#pragma GCC diagnostic ignored "-Wdeprecated-declarations"\n')
        o.write('#include "wrappers.h"\n#include "ops.h"\n')
        for f in wrapped(funcs):
            args = call_args(f)
            bits = sorted({ROLES[r][2] for r in f.roles if ROLES[r][2]})
            has = " | ".join("XSPROF_R_" + b for b in bits) or "0"
            inits = [".site = xs_site", ".op = %s" % op_id(f), ".has = %s" % has, ".s = &xs_s"]
            for role, pname in f.roles.items():
                field, cast, _ = ROLES[role]
                if role in ("status", "statuses") or field is None:
                    continue
                inits.append(".%s = %s%s" % (field, cast, pname))
            o.write("\n%s\n{\n" % impl_proto(f))
            o.write("    if (!xsprof_mpi_enter(%s))\n        return P%s(%s);\n" % (op_id(f), f.name, args))
            o.write("    xsprof_mpi_scratch xs_s;\n")
            o.write("    xsprof_mpi_call xs_c = {%s};\n" % ", ".join(inits))
            if "status" in f.roles:
                p = f.roles["status"]
                o.write("    %s = xsprof_mpi_status_own(&xs_c, %s);\n" % (p, p))
            if "statuses" in f.roles:
                p = f.roles["statuses"]
                o.write("    %s = xsprof_mpi_statuses_own(&xs_c, %s, %s);\n" % (p, f.roles["nreq"], p))
            o.write("    xsprof_mpi_pre(&xs_c);\n")
            o.write("    %s xs_rc = P%s(%s);\n" % (f.ret, f.name, args))
            o.write("    xsprof_mpi_post(&xs_c, %s);\n" % ("xs_rc" if f.ret == "int" else "MPI_SUCCESS"))
            o.write("    return xs_rc;\n}\n")
            o.write("\n%s\n{\n    return %s;\n}\n" % (f.proto, impl_call(f, "__builtin_return_address(0)")))


# ---- Fortran ---------------------------------------------------------------

# Fortran semantics differ from C: the binding ignores the returned address.
FORTRAN_KEEP_OMPI = {"MPI_Buffer_detach"}


def fortran_plan(f):
    """Per parameter: (fortran decl, pre lines, call arg, post lines); None when
    the function cannot be bound here (strings, callbacks, handle arrays)."""
    if f.name in FORTRAN_KEEP_OMPI:
        return None
    role_of = {v: k for k, v in f.roles.items()}
    plan = []
    for p in f.params:
        t, n, arr = p.type, p.name, bool(p.dims)
        role = role_of.get(n)
        base = t.replace("const ", "").strip()
        if t in ("void *", "const void *") and not arr:
            # buffers and addresses: Fortran passes them by reference already
            plan.append(("void *%s" % n, [], "xsprof_f_buf(%s)" % n, []))
        elif base == "int" and not arr:
            plan.append(("MPI_Fint *%s" % n, [], "*%s" % n, []))
        elif (base == "int *" and not arr) or (base == "int" and p.dims == "[]"):
            post = []
            if role == "index":
                post = ["    if (xs_rc == MPI_SUCCESS && *%s != MPI_UNDEFINED)\n        (*%s)++;\n" % (n, n)]
            if role == "indices":
                post = ["    if (xs_rc == MPI_SUCCESS && *%s != MPI_UNDEFINED)\n        for (int i = 0; i < *%s; i++)\n"
                        "            %s[i]++;\n" % (f.roles["outcount"], f.roles["outcount"], n)]
            plan.append(("MPI_Fint *%s" % n, [], n, post))
        elif base in ("MPI_Aint", "MPI_Offset", "MPI_Count") and not arr:
            plan.append(("%s *%s" % (base, n), [], "*%s" % n, []))
        elif base in ("MPI_Aint *", "MPI_Offset *", "MPI_Count *") and not arr:
            plan.append(("%s %s" % (base, n), [], n, []))
        elif base in HANDLES and not arr:
            plan.append(("MPI_Fint *%s" % n, ["    %s xs_%s = %s_f2c(*%s);\n" % (base, n, F2C[base], n)], "xs_" + n, []))
        elif base.endswith(" *") and base[:-2] in HANDLES and not arr:
            h = base[:-2]
            plan.append(("MPI_Fint *%s" % n, ["    %s xs_%s = %s_f2c(*%s);\n" % (h, n, F2C[h], n)], "&xs_" + n,
                         ["    if (xs_rc == MPI_SUCCESS)\n        *%s = %s_c2f(xs_%s);\n" % (n, F2C[h], n)]))
        elif base == "MPI_Request" and p.dims == "[]" and role == "reqs":
            cnt = "*" + f.roles["nreq"]
            plan.append(("MPI_Fint *%s" % n,
                         ["    MPI_Request xs_%s_in[XSPROF_MPI_INLINE];\n" % n,
                          "    MPI_Request *xs_%s = xsprof_f_requests(%s, %s, xs_%s_in);\n" % (n, n, cnt, n),
                          "    if (!xs_%s) {\n        *ierr = MPI_ERR_NO_MEM;\n        return;\n    }\n" % n],
                         "xs_" + n,
                         ["    xsprof_f_requests_done(%s, %s, xs_%s, xs_%s_in);\n" % (n, cnt, n, n)]))
        elif t == "const MPI_Status *":
            plan.append(("MPI_Fint *%s" % n, ["    MPI_Status xs_%s;\n" % n, "    PMPI_Status_f2c(%s, &xs_%s);\n" % (n, n)],
                         "&xs_" + n, []))
        elif base == "MPI_Status *" and role in ("status", None) and not arr:
            # in/out (Status_set_*): start from the Fortran status
            plan.append(("MPI_Fint *%s" % n, ["    MPI_Status xs_%s;\n" % n,
                                                "    if (%s != MPI_F_STATUS_IGNORE)\n        PMPI_Status_f2c(%s, &xs_%s);\n"
                                                % (n, n, n)],
                         "(%s == MPI_F_STATUS_IGNORE ? MPI_STATUS_IGNORE : &xs_%s)" % (n, n),
                         ["    if (xs_rc == MPI_SUCCESS && %s != MPI_F_STATUS_IGNORE)\n"
                          "        PMPI_Status_c2f(&xs_%s, %s);\n" % (n, n, n)]))
        elif (base == "MPI_Status *" or (base == "MPI_Status" and p.dims == "[]")) and role == "statuses":
            cnt = ("*" + f.roles["nreq"])
            plan.append(("MPI_Fint *%s" % n,
                         ["    MPI_Status xs_%s_in[XSPROF_MPI_INLINE];\n" % n,
                          "    MPI_Status *xs_%s;\n" % n,
                          "    if (xsprof_f_statuses(%s, %s, xs_%s_in, &xs_%s)) {\n%s        *ierr = MPI_ERR_NO_MEM;\n"
                          "        return;\n    }\n" %
                          (n, cnt, n, n, "".join("    " + q[3][0] for q in plan if q[2].startswith("xs_") and "requests" in "".join(q[3])))],
                         "xs_" + n,
                         ["    xsprof_f_statuses_done(%s, %s, xs_%s, xs_%s_in, xs_rc);\n" % (n, cnt, n, n)]))
        else:
            return None
    return plan


def gen_f_passthrough(f, o):
    """A function whose arguments are not translated here (strings,
    callbacks, handle arrays): timed and recorded by name around Open MPI's
    own Fortran binding, which receives every argument untouched, hidden
    string lengths included. MPI_T has no Fortran binding. Returns 1 when
    written."""
    if f.name.startswith("MPI_T_"):
        return 0
    low = f.name.lower()
    nlen = sum(1 for p in f.params if "char" in p.type)
    args = ["void *a%d" % i for i in range(len(f.params))] + ["MPI_Fint *ierr"] + \
           ["size_t len%d" % i for i in range(nlen)]
    names = ["a%d" % i for i in range(len(f.params))] + ["ierr"] + ["len%d" % i for i in range(nlen)]
    decl = ", ".join(args)
    o.write("\nXSPROF_FORTRAN void %s_(%s);\n" % (low, decl))
    o.write("void %s_(%s)\n{\n" % (low, decl))
    o.write("    static void *xs_next;\n")
    o.write("    void (*xs_real)(%s) = (void (*)(%s))xsprof_f_next(&xs_next, \"%s_\");\n" % (decl, decl, low))
    o.write("    if (!xs_real) {\n        *ierr = MPI_ERR_INTERN;\n        return;\n    }\n")
    o.write("    int64_t xs_t0 = xsprof_f_enter(%s);\n" % op_id(f))
    o.write("    xs_real(%s);\n" % ", ".join(names))
    o.write("    xsprof_f_leave(%s, __builtin_return_address(0), xs_t0);\n}\n" % op_id(f))
    for alias in (low, low + "__", f.name.upper()):
        o.write('XSPROF_FORTRAN void %s(%s) __attribute__((alias("%s_")));\n' % (alias, decl, low))
    o.write('XSPROF_OMPI_F08_ALIAS(%s, %s, (%s))\n' % (low[4:], low, decl))
    return 1


def gen_f(funcs, out):
    bound = 0
    with open(os.path.join(out, "wrappers_f.c"), "w") as o:
        o.write(HEADER)
        o.write('#pragma GCC diagnostic ignored "-Wdeprecated-declarations"\n')
        o.write('#include "pmpi_wrappers/fortran.h"\n')
        o.write('#include "ops.h"\n#include "wrappers.h"\n')
        for f in funcs:
            if f.kind in ("SKIP", "SPECIAL") or f.ret != "int":
                continue
            plan = fortran_plan(f)
            if plan is None:
                bound += gen_f_passthrough(f, o)
                continue
            bound += 1
            decl = ", ".join([d for d, _, _, _ in plan] + ["MPI_Fint *ierr"])
            low = f.name.lower()
            o.write("\nXSPROF_FORTRAN void %s_(%s);\n" % (low, decl))
            o.write("void %s_(%s)\n{\n" % (low, decl))
            for _, pre, _, _ in plan:
                o.writelines(pre)
            cargs = ", ".join(["__builtin_return_address(0)"] + [a for _, _, a, _ in plan])
            o.write("    int xs_rc = xsprof_w_%s(%s);\n" % (f.name, cargs))
            for _, _, _, post in plan:
                o.writelines(post)
            o.write("    *ierr = (MPI_Fint)xs_rc;\n}\n")
            for alias in (low, low + "__", f.name.upper()):
                o.write('XSPROF_FORTRAN void %s(%s) __attribute__((alias("%s_")));\n' % (alias, decl, low))
            # Open MPI's mpi_f08 module calls ompi_<name>_f (mpif.h's entry
            # with the same arguments): catching it records mpi_f08 programs.
            o.write('XSPROF_OMPI_F08_ALIAS(%s, %s, (%s))\n' % (low[4:], low, decl))
    return bound


def main():
    if len(sys.argv) != 3:
        fail("usage: gen_wrappers.py SPEC_DIR OUT_DIR")
    funcs = load(sys.argv[1])
    os.makedirs(sys.argv[2], exist_ok=True)
    gen_ops(funcs, sys.argv[2])
    gen_c(funcs, sys.argv[2])
    gen_f(funcs, sys.argv[2])


if __name__ == "__main__":
    main()
