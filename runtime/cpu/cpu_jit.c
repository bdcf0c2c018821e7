/*
 * cpu_jit.c: the cpu backend's JIT and its code caches.  A plan's code is
 * found, in this order: made before in this process (a plan key hashes
 * what the code depends on: the cell's nodes, sizes, hoist setting, vector
 * width); the object file of a loaded bundle made for a CPU target this
 * machine runs (cpu_target.c); the kernel cache's directory (runtime/cache,
 * under a key of the module's text, LLVM's version and the host's CPU and
 * features: a new process skips O3 and code generation, about 0.4 s for an
 * LSTM); else compiled for this machine (cpu_object.c) and stored there.
 * Every object file is added to one process-wide ORC LLJIT.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, sysconf */
#ifdef RNNC_HAVE_LLVM
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>

#include "codegen/codegen.h"
#include "runtime/cache/cache.h"
#include "runtime/cpu/cpu.h"

_Static_assert(CG_MAX_STAGES == 16, "rt_cpu_code.ew is sized for 16 stages");

typedef struct code_entry {
    rt_cache_key key;
    rt_cpu_code code;
    struct code_entry *next;
} code_entry;

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    rnnc_status init_status;
    char init_error[256];
    LLVMOrcLLJITRef jit;
    rt_cpu_target host;
    int threads;
    atomic_bool warned_untrusted; /* once a process */
    code_entry *entries;
} g_jit = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER};

static rnnc_status detect_host(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    g_jit.threads = (int)cm_env_long("RNNC_THREADS", n > 0 ? (int)n : 1);
    if (g_jit.threads < 1)
        g_jit.threads = 1;
    return rt_cpu_target_get("native", &g_jit.host);
}

static void init_fail(const char *what, char *msg)
{
    g_jit.init_status = RNNC_ERR_LLVM;
    snprintf(g_jit.init_error, sizeof g_jit.init_error, "%s: %s", what, msg ? msg : "?");
    if (msg)
        LLVMDisposeMessage(msg);
}

static void init_jit(void)
{
    LLVMInitializeNativeTarget();
    LLVMInitializeNativeAsmPrinter();
    if (detect_host() != RNNC_OK) {
        g_jit.init_status = RNNC_ERR_LLVM;
        snprintf(g_jit.init_error, sizeof g_jit.init_error, "%s", rnnc_last_error());
        return;
    }
    LLVMOrcJITTargetMachineBuilderRef jtmb;
    LLVMErrorRef err = LLVMOrcJITTargetMachineBuilderDetectHost(&jtmb);
    LLVMOrcLLJITBuilderRef lb = NULL;
    if (!err) {
        lb = LLVMOrcCreateLLJITBuilder();
        LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(lb, jtmb);
        err = LLVMOrcCreateLLJIT(&g_jit.jit, lb);
    }
    LLVMOrcDefinitionGeneratorRef gen;
    if (!err)
        err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
            &gen, LLVMOrcLLJITGetGlobalPrefix(g_jit.jit), NULL, NULL);
    if (err) {
        init_fail("cannot start the ORC JIT", LLVMGetErrorMessage(err));
        return;
    }
    LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(g_jit.jit), gen);
}

rnnc_status rt_cpu_ready(void)
{
    pthread_once(&g_jit.once, init_jit);
    if (g_jit.init_status != RNNC_OK)
        return err_fail(g_jit.init_status, "cpu: %s", g_jit.init_error);
    return RNNC_OK;
}

int rt_cpu_thread_count(void)
{
    return rt_cpu_ready() == RNNC_OK ? g_jit.threads : 1;
}

rnnc_status rt_cpu_describe(char *buf, size_t n)
{
    rnnc_status st = rt_cpu_ready();
    if (st == RNNC_OK)
        snprintf(buf, n, "%s, %d floats per vector, %d threads", g_jit.host.cpu,
                 g_jit.host.vw, g_jit.threads);
    return st;
}

static rnnc_status llvm_error(const char *what, LLVMErrorRef err)
{
    char *m = LLVMGetErrorMessage(err);
    rnnc_status st = err_fail(RNNC_ERR_LLVM, "cpu: %s: %s", what, m);
    LLVMDisposeErrorMessage(m);
    return st;
}

/* The object of key k from the disk cache, where this user's cache holds it. */
static bool cached_object(rt_cache_key k, const char *label, void **obj, size_t *size)
{
    char why[160];
    rnnc_status got = rt_cache_read_host(k, obj, size, why, sizeof why);
    if (got == RNNC_ERR_IO && !atomic_exchange(&g_jit.warned_untrusted, true))
        fprintf(stderr, "rnnc: warning: the cpu backend compiles its code rather than load it "
                        "from the kernel cache: %s\n", why);
    if (got == RNNC_ERR_FORMAT && cm_log_enabled("info"))
        fprintf(stderr, "rnnc: cache entry for %s is bad (%s): recompiling\n", label, why);
    return got == RNNC_OK;
}

/* Module c's object file: from the loaded bundles where `bundle` names the
 * target text they keep it under (RNNC_ERR_NOT_FOUND, quietly, where none
 * does); else from the disk cache, else made and stored there. */
static rnnc_status object_of(rt_cpu_module *c, const char *bundle, const char *label,
                             void **obj, size_t *size, rt_origin *origin)
{
    rt_cache_key k;
    rnnc_status st = rt_cpu_module_key(c, &k);
    if (st != RNNC_OK)
        return st;
    if (bundle) {
        *origin = RT_FROM_BUNDLE;
        return rt_bundle_lookup_host(k, bundle, obj, size) ? RNNC_OK : RNNC_ERR_NOT_FOUND;
    }
    if (cached_object(k, label, obj, size)) {
        *origin = RT_FROM_DISK;
        return RNNC_OK;
    }
    *origin = RT_FROM_COMPILE;
    st = rt_cpu_module_emit(c, obj, size);
    if (st == RNNC_OK)
        rt_cache_write(k, label, RT_CACHE_HOST, *obj, *size);
    return st;
}

/* Hands a copy of the object file to the JIT, which owns that. */
static rnnc_status add_object(const void *obj, size_t size, const char *label)
{
    LLVMMemoryBufferRef buf = LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, size, label);
    if (!buf)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    LLVMErrorRef err =
        LLVMOrcLLJITAddObjectFile(g_jit.jit, LLVMOrcLLJITGetMainJITDylib(g_jit.jit), buf);
    return err ? llvm_error("adding the object file to the JIT", err) : RNNC_OK;
}

static rnnc_status lookup(const char *name, void **fn)
{
    LLVMOrcExecutorAddress addr = 0;
    LLVMErrorRef err = LLVMOrcLLJITLookup(g_jit.jit, &addr, name);
    if (err)
        return llvm_error(name, err);
    *fn = (void *)(uintptr_t)addr;
    return RNNC_OK;
}

static rnnc_status lookup_all(const cg_cpu_plan *p, const char *pfx, rt_cpu_code *c)
{
    char name[96];
    rnnc_status st = RNNC_OK;
    for (int part = 0; part < 2 && st == RNNC_OK; part++)
        for (int s = 0; s < p->n_stages[part] && st == RNNC_OK; s++) {
            if (p->stages[part][s].n_blocks == 0)
                continue;
            cg_cpu_ew_name(name, sizeof name, pfx, part, s);
            void *f = NULL;
            st = lookup(name, &f);
            c->ew[part][s] = (rt_cpu_ew)(uintptr_t)f;
        }
    for (int32_t g = 0; g < p->n_gemms && st == RNNC_OK; g++)
        for (int mr = 1; mr <= p->mr && st == RNNC_OK; mr++) {
            cg_cpu_mk_name(name, sizeof name, pfx, g, mr);
            void *f = NULL;
            st = lookup(name, &f);
            c->mk[g * p->mr + mr - 1] = (rt_cpu_mk)(uintptr_t)f;
        }
    return st;
}

/* The object of plan p for target t (from a bundle only where `bundle`
 * gives its target text).  Runs outside the JIT's lock: two cells of a
 * model compile at once (cpu.c), each in an LLVM context of its own. */
static rnnc_status object_for(const cg_cpu_plan *p, const char *pfx, const char *label,
                              const rt_cpu_target *t, const char *bundle, void **obj,
                              size_t *size, rt_origin *origin)
{
    rt_cpu_module *c = NULL;
    rnnc_status st = rt_cpu_module_create(p, pfx, t, &c);
    if (st == RNNC_OK)
        st = object_of(c, bundle, label, obj, size, origin);
    rt_cpu_module_free(c);
    return st;
}

static code_entry *find_entry(rt_cache_key key)
{
    code_entry *e = g_jit.entries;
    while (e && !(e->key.lo == key.lo && e->key.hi == key.hi))
        e = e->next;
    return e;
}

/* Links plan p's object into the JIT as a new entry for `key` (the lock is held). */
static rnnc_status link_entry(const cg_cpu_plan *p, rt_cache_key key, const char *pfx,
                              const char *label, const void *obj, size_t size, code_entry **out)
{
    code_entry *e = calloc(1, sizeof *e);
    if (!e)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    e->key = key;
    e->code.n_gemms = p->n_gemms;
    e->code.mr = p->mr;
    e->code.mk = calloc((size_t)(p->n_gemms * p->mr + 1), sizeof(rt_cpu_mk));
    rnnc_status st = e->code.mk ? add_object(obj, size, label)
                                : err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    if (st == RNNC_OK)
        st = lookup_all(p, pfx, &e->code);
    if (st != RNNC_OK) {
        free(e->code.mk);
        free(e);
        return st;
    }
    e->next = g_jit.entries;
    g_jit.entries = e;
    *out = e;
    return RNNC_OK;
}

/* The code of plan p: made before in this process, else from target t's
 * object (only from the loaded bundles where `bundle` names t's text).
 * Where two threads make the same code at once, the first to link it wins
 * and the other's object is dropped. */
static rnnc_status code_of(const cg_cpu_plan *p, rnnc_hoist hoist, const rt_cpu_target *t,
                           const char *bundle, const rt_cpu_code **out)
{
    rt_cache_key key = rt_cpu_plan_key(p, hoist);
    pthread_mutex_lock(&g_jit.lock);
    code_entry *e = find_entry(key);
    pthread_mutex_unlock(&g_jit.lock);
    if (e) {
        *out = &e->code;
        return RNNC_OK;
    }
    double t0 = cm_now_ms();
    char pfx[48], label[56];
    rt_cpu_plan_prefix(key, pfx, sizeof pfx);
    rt_cpu_plan_label(p, label, sizeof label);
    void *obj = NULL;
    size_t size = 0;
    rt_origin origin = RT_FROM_COMPILE;
    rnnc_status st = object_for(p, pfx, label, t, bundle, &obj, &size, &origin);
    if (st != RNNC_OK)
        return st;
    pthread_mutex_lock(&g_jit.lock);
    if (!(e = find_entry(key)))
        st = link_entry(p, key, pfx, label, obj, size, &e);
    pthread_mutex_unlock(&g_jit.lock);
    free(obj);
    if (st != RNNC_OK)
        return st;
    rt_cache_note_origin(origin);
    if (cm_log_enabled("info"))
        fprintf(stderr, "rnnc: %s (%s): %s, %.3f ms\n", label, t->cpu, rt_origin_name(origin),
                cm_now_ms() - t0);
    *out = &e->code;
    return RNNC_OK;
}

/* The cpu targets of the loaded bundles that this machine runs, widest
 * vectors first. */
#define MAX_TARGETS 4
typedef struct bundle_targets {
    rt_cpu_target t[MAX_TARGETS];
    char text[MAX_TARGETS][RT_CPU_TARGET_TEXT_MAX];
    int n;
} bundle_targets;

static bool take_target(const char *text, void *ctx)
{
    bundle_targets *c = ctx;
    rt_cpu_target t;
    if (c->n == MAX_TARGETS || strlen(text) >= RT_CPU_TARGET_TEXT_MAX ||
        !rt_cpu_target_parse(text, &t) || !rt_cpu_target_runs_here(&t, &g_jit.host))
        return false;
    int at = c->n;
    for (int i = 0; i < c->n; i++) {
        if (strcmp(c->text[i], text) == 0)
            return false;
        if (at == c->n && t.vw > c->t[i].vw)
            at = i;
    }
    memmove(&c->t[at + 1], &c->t[at], (size_t)(c->n - at) * sizeof *c->t);
    memmove(&c->text[at + 1], &c->text[at], (size_t)(c->n - at) * sizeof *c->text);
    c->t[at] = t;
    snprintf(c->text[at], sizeof c->text[at], "%s", text);
    c->n++;
    return true;
}

/* Plans s for each bundle target in turn until a bundle holds its code:
 * RNNC_ERR_NOT_FOUND where none does. */
static rnnc_status from_bundles(const ir_schedule *s, ir_sizes sz, rnnc_hoist hoist,
                                ir_arena *a, cg_cpu_plan *plan, const rt_cpu_code **out)
{
    bundle_targets *c = calloc(1, sizeof *c);
    if (!c)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    rt_bundle_host_targets(take_target, c);
    rnnc_status st = RNNC_ERR_NOT_FOUND;
    for (int i = 0; i < c->n && st == RNNC_ERR_NOT_FOUND; i++) {
        st = cg_cpu_plan_build(s, sz, c->t[i].vw, a, plan);
        if (st == RNNC_OK)
            st = code_of(plan, hoist, &c->t[i], c->text[i], out);
    }
    free(c);
    return st;
}

rnnc_status rt_cpu_prepare(const ir_schedule *s, ir_sizes sz, rnnc_hoist hoist, ir_arena *a,
                           cg_cpu_plan *plan, const rt_cpu_code **out)
{
    rnnc_status st = rt_cpu_ready();
    if (st == RNNC_OK && rt_bundle_registered() > 0)
        st = from_bundles(s, sz, hoist, a, plan, out);
    else if (st == RNNC_OK)
        st = RNNC_ERR_NOT_FOUND;
    if (st != RNNC_ERR_NOT_FOUND)
        return st;
    st = cg_cpu_plan_build(s, sz, g_jit.host.vw, a, plan);
    return st == RNNC_OK ? code_of(plan, hoist, &g_jit.host, NULL, out) : st;
}

rnnc_status rt_cpu_dump_llvm(const ir_fn *f, ir_sizes sz, rnnc_hoist hoist, char **text)
{
    rnnc_status st = rt_cpu_ready();
    if (st != RNNC_OK)
        return st;
    ir_arena *a = ir_arena_create();
    if (!a)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    cg_cpu_plan p;
    rt_cpu_module *c = NULL;
    st = rt_cpu_plan_cell(f, sz, hoist, g_jit.host.vw, a, &p);
    if (st == RNNC_OK)
        st = rt_cpu_module_create(&p, "rnnc_cpu", &g_jit.host, &c);
    if (st == RNNC_OK && !(*text = rt_cpu_module_text(c)))
        st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "cpu: out of memory");
    rt_cpu_module_free(c);
    ir_arena_destroy(a);
    return st;
}
#endif /* RNNC_HAVE_LLVM */
