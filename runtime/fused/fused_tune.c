/*
 * fused_tune.c: which tuning (tiles and threads of the step kernel) the
 * fused backend uses for a batch size, and autotuning.  The first time a
 * shape is seen on a device, candidate tunings are generated, compiled in
 * parallel (disk cache or NVRTC) and timed on the device within a time
 * budget; the fastest is recorded (rt_tuning_put) so that later processes
 * start on it, and kept in memory for this one.  Every candidate is a
 * correct kernel set: only rounding can differ between them.  The order of
 * lookups is in fused.h; docs/cache.md has the key format.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/fused/fused.h"

#ifdef RT_HAVE_CUDA_H

#define MAX_CANDIDATES 40
#define MAX_THREADS 8
#define DEFAULT_BUDGET_MS 2000.0
#define KEY_MAX 512

/* ---------------------------------------------------------------- keys and text */

void rt_fused_model_key(const rt_fused *m, char *buf, size_t n)
{
    const rt_spec *s = &m->spec;
    const char *dt = s->dtype == RNNC_F16 ? "f16" : s->dtype == RNNC_BF16 ? "bf16" : "f32";
    snprintf(buf, n, "fused %s#%016llx I=%lld H=%lld P=%lld hoist=%d bf=%d math=%d %s cg=%d",
             s->fn[0]->name, (unsigned long long)m->cell_hash, (long long)s->sizes[0].I,
             (long long)s->sizes[0].H, (long long)s->sizes[0].P, (int)s->hoist,
             (int)s->batch_first, (int)s->math, dt, RT_CODEGEN_VERSION);
    size_t len = strlen(buf);
    if (m->share_base > 1 && len < n)
        snprintf(buf + len, n - len, " share=%d", m->share_base);
}

void rt_fused_shape_key(const rt_fused *m, int64_t batch, char *buf, size_t n)
{
    char model[384];
    rt_fused_model_key(m, model, sizeof model);
    snprintf(buf, n, "%s sm_%d sms=%d B=%lld", model, m->sm, m->sm_count, (long long)batch);
}

void rt_fused_tuning_text(rt_fused_tuning t, char *buf, size_t n)
{
    int len = snprintf(buf, n, "ut=%d bt=%d nt=%d", t.unit_tile, t.batch_tile, t.threads);
    if ((t.reg_rows || t.reg_batch) && len > 0 && (size_t)len < n)
        len += snprintf(buf + len, n - len, " rr=%d bb=%d", t.reg_rows, t.reg_batch);
    if (t.exchange && len > 0 && (size_t)len < n)
        len += snprintf(buf + len, n - len, " ex=%d", t.exchange);
    if (t.outer && len > 0 && (size_t)len < n)
        snprintf(buf + len, n - len, " op=1");
}

/* "<name>=<digits>" at *p, the value in [0, max]; advances *p.  Not sscanf:
 * its %d is undefined on a number past INT_MAX, and records come from disk. */
static bool tuning_field(const char **p, const char *name, int max, int *out)
{
    size_t len = strlen(name);
    if (strncmp(*p, name, len) != 0 || (*p)[len] != '=')
        return false;
    const char *c = *p + len + 1;
    int v = 0, digits = 0;
    for (; *c >= '0' && *c <= '9'; c++, digits++) {
        if (*c - '0' > max || v > (max - (*c - '0')) / 10)
            return false;
        v = v * 10 + (*c - '0');
    }
    *p = c;
    *out = v;
    return digits > 0 && digits <= 10;
}

/* Tiles of up to 2^16 units or rows; 0 = the generator's choice everywhere. */
#define MAX_TUNING_TILE 65536

/* "ut=U bt=B nt=N", then " rr=R bb=S" where the register tile is not the
 * generator's choice, then " ex=1" or " ex=2" where the exchange is not,
 * then " op=1" for outer products. */
bool rt_fused_tuning_parse(const char *text, rt_fused_tuning *t)
{
    int ut, bt, nt, rr = 0, bb = 0, ex = 0, op = 0;
    const char *p = text;
    if (!p || !tuning_field(&p, "ut", MAX_TUNING_TILE, &ut) || *p++ != ' ' ||
        !tuning_field(&p, "bt", MAX_TUNING_TILE, &bt) || *p++ != ' ' ||
        !tuning_field(&p, "nt", 1024, &nt) || nt % 32)
        return false;
    if (strncmp(p, " rr=", 4) == 0 && (p++, !tuning_field(&p, "rr", 16, &rr) || *p++ != ' ' ||
                                       !tuning_field(&p, "bb", 16, &bb)))
        return false;
    if (strncmp(p, " ex=", 4) == 0 && (p++, !tuning_field(&p, "ex", 2, &ex) || ex == 0))
        return false;
    if (*p == ' ' && (p++, !tuning_field(&p, "op", 1, &op) || op == 0))
        return false;
    if (*p != '\0' || !cg_cuda_reg_tile_ok(rr) || !cg_cuda_reg_tile_ok(bb))
        return false;
    *t = (rt_fused_tuning){ut, bt, nt, rr, bb, ex, op};
    return true;
}

/* A person's tuning (`rnnc dump --tuning`): any of the fields, each once, in
 * any order, one space between them; the rest 0 (the generator's choice).
 * The same bounds as a record's, so every text the strict form takes is
 * taken here too. */
bool rt_fused_tuning_parse_loose(const char *text, rt_fused_tuning *t)
{
    rt_fused_tuning v = {0};
    struct {
        const char *name;
        int max, *out;
        bool seen;
    } f[] = {{"ut", MAX_TUNING_TILE, &v.unit_tile, false},
             {"bt", MAX_TUNING_TILE, &v.batch_tile, false},
             {"nt", 1024, &v.threads, false},
             {"rr", 16, &v.reg_rows, false},
             {"bb", 16, &v.reg_batch, false},
             {"ex", 2, &v.exchange, false},
             {"op", 1, &v.outer, false}};
    const char *p = text;
    if (!p || !*p)
        return false;
    for (;;) {
        size_t i = 0;
        while (i < sizeof f / sizeof f[0] && !tuning_field(&p, f[i].name, f[i].max, f[i].out))
            i++;
        if (i == sizeof f / sizeof f[0] || f[i].seen)
            return false;
        f[i].seen = true;
        if (*p == '\0')
            break;
        if (*p++ != ' ')
            return false;
    }
    if (v.threads % 32 || !cg_cuda_reg_tile_ok(v.reg_rows) || !cg_cuda_reg_tile_ok(v.reg_batch))
        return false;
    *t = v;
    return true;
}

/* ---------------------------------------------------------------- candidates */

static bool same(rt_fused_tuning a, rt_fused_tuning b)
{
    return a.unit_tile == b.unit_tile && a.batch_tile == b.batch_tile &&
           a.threads == b.threads && a.reg_rows == b.reg_rows && a.reg_batch == b.reg_batch &&
           a.exchange == b.exchange && a.outer == b.outer;
}

static void add(rt_fused_tuning *out, int *n, int max, rt_fused_tuning t)
{
    for (int i = 0; i < *n; i++)
        if (same(out[i], t))
            return;
    if (*n < max)
        out[(*n)++] = t;
}

/* The generator's unit tile for batch tile bt (cuda_tile.c): the grid
 * fills the SMs. */
static int auto_unit_tile(int64_t batch, int64_t hidden, int sm_count, int64_t bt)
{
    int64_t nbb = (batch + bt - 1) / bt, per = sm_count / nbb;
    return (int)((hidden + (per > 0 ? per : 1) - 1) / (per > 0 ? per : 1));
}

/* Each of the n candidates followed by itself with tagged words instead of
 * the barrier, as far as max allows.  For half models, whose 32-bit words
 * move the barrier's bytes; which tiling wins changes with the exchange
 * (H100, bf16 LSTM B = 64, I = H = 512: 0.438 ms with tagged words and
 * tuned tiles, 0.531 with the heuristic's, 0.490 the best with the
 * barrier; at H = 1024 tagged words lost, 1.275 -> 1.623).  A candidate
 * that comes out as the barrier's kernel is dropped when generated. */
static int with_tagged(rt_fused_tuning *out, int n, int max)
{
    rt_fused_tuning base[MAX_CANDIDATES];
    int k = 0;
    n = n < MAX_CANDIDATES ? n : MAX_CANDIDATES;
    memcpy(base, out, sizeof base[0] * (size_t)n);
    for (int i = 0; i < n; i++) {
        add(out, &k, max, base[i]);
        rt_fused_tuning t = base[i];
        t.exchange = 2;
        add(out, &k, max, t);
    }
    return k;
}

/* In order of promise, so that a short budget times the likeliest first:
 * larger register tiles (fewer shared-memory reads per FMA: on the H100
 * 8 x 4 took B = 64 1.125 -> 1.069 ms and, at 512 threads, B = 128 2.021
 * -> 1.895; 8 x 8 H = 1024 B = 64 3.908 -> 3.864), other batch tiles,
 * other thread counts, then wider unit tiles (half the blocks: cheaper
 * grid barriers, more work per block).  Below 8 rows a block has 1 x 1
 * tiles and no register-tile candidates. */
int rt_fused_candidates(int64_t batch, int64_t hidden, int sm_count, bool tagged,
                        rt_fused_tuning *out, int max)
{
    static const int bts[] = {16, 32, 8, 64};
    int n = 0;
    if (sm_count <= 0)
        sm_count = 132;
    add(out, &n, max, (rt_fused_tuning){0});
    /* B >= 128: outer products (cuda_outer.c) over h in bulk-staged
     * chunks, 8 x 8 a thread, four groups of threads splitting K (three
     * for 24 rows a block: 384 threads); where the generator cannot take
     * them the candidate is another tiling or a duplicate, dropped (the
     * heuristic itself takes the first of 256, 384, 512 threads that takes
     * them, so one of these repeats it).  The H200, LSTM I = H = 1024, B =
     * 256: the step 133 K -> 118 K cycles against 8 x 4 tiles
     * (bench/results/h200/outer/) */
    if (batch >= 128) {
        add(out, &n, max, (rt_fused_tuning){.threads = 512, .reg_rows = 8, .reg_batch = 8, .outer = 1});
        add(out, &n, max, (rt_fused_tuning){.threads = 384, .reg_rows = 8, .reg_batch = 8, .outer = 1});
        add(out, &n, max, (rt_fused_tuning){.threads = 256, .reg_rows = 8, .reg_batch = 8, .outer = 1});
    }
    if (batch >= 8) {
        add(out, &n, max, (rt_fused_tuning){.reg_rows = 8, .reg_batch = 4});
        add(out, &n, max, (rt_fused_tuning){.threads = 512, .reg_rows = 8, .reg_batch = 4});
        add(out, &n, max, (rt_fused_tuning){.reg_rows = 8, .reg_batch = 8});
    }
    /* 64 <= B < 128: outer products too, 4 x 8 a thread at 512 threads in
     * batch tiles of 32 and 64 rows.  The H200, I = H = 512, B = 64, the
     * kernels of a stack's wavefront on half the SMs, fixed by hand: 4 layers
     * 3.63-3.68 ms -> 3.43 (32 rows) and 3.53 (64), two bidirectional layers
     * 3.95 -> 3.71 and 3.75 (8 x 4 in 32 rows: 3.50 and 3.80); I = H = 1024
     * alone 3.20-3.25 -> 2.86 at 64 rows (bench/results/h200/issue9/
     * 2026-11-29-s23/) */
    if (batch >= 64 && batch < 128) {
        add(out, &n, max, (rt_fused_tuning){.batch_tile = 32, .threads = 512, .reg_rows = 4,
                                            .reg_batch = 8, .outer = 1});
        add(out, &n, max, (rt_fused_tuning){.batch_tile = 64, .threads = 512, .reg_rows = 4,
                                            .reg_batch = 8, .outer = 1});
    }
    /* H = 1024, B = 64: W_hh streamed at two batch groups with 8 x 4 tiles
     * took 3.696 ms against 3.889 on chip (bench/results/h100/rejected/
     * interleave/, where it came up) */
    if (batch >= 32)
        add(out, &n, max,
            (rt_fused_tuning){.batch_tile = 32, .threads = 512, .reg_rows = 8, .reg_batch = 4});
    /* H >= 1024: W_hh streamed at 256 threads with 8 x 8 tiles (their 64
     * accumulators need more than the 128 registers of 512 threads): fp32
     * on the H100, I = H = 1024 B = 64 in 16-row batch tiles 3.681 ->
     * 3.554 ms, B = 256 in 32-row ones 13.256 -> 12.410, I = H = 2048 B =
     * 64 15.312 -> 14.605 (bench/results/h100/stream88/) */
    if (batch >= 32 && hidden >= 1024) {
        add(out, &n, max,
            (rt_fused_tuning){.batch_tile = 16, .threads = 256, .reg_rows = 8, .reg_batch = 8});
        add(out, &n, max,
            (rt_fused_tuning){.batch_tile = 32, .threads = 256, .reg_rows = 8, .reg_batch = 8});
    }
    for (size_t i = 0; i < sizeof bts / sizeof bts[0]; i++)
        if (bts[i] <= batch)
            add(out, &n, max, (rt_fused_tuning){.batch_tile = bts[i]});
    add(out, &n, max, (rt_fused_tuning){.threads = 512});
    add(out, &n, max, (rt_fused_tuning){.threads = 128});
    int64_t bt_h = batch >= 32 ? 16 : batch;
    int ut2 = 2 * auto_unit_tile(batch, hidden, sm_count, bt_h);
    if (ut2 < hidden) {
        add(out, &n, max, (rt_fused_tuning){.unit_tile = ut2});
        add(out, &n, max, (rt_fused_tuning){.unit_tile = ut2, .threads = 512});
    }
    for (size_t i = 0; i < sizeof bts / sizeof bts[0]; i++)
        if (bts[i] <= batch)
            add(out, &n, max, (rt_fused_tuning){.batch_tile = bts[i], .threads = 512});
    add(out, &n, max, (rt_fused_tuning){.threads = 1024});
    return tagged && batch > 8 ? with_tagged(out, n, max) : n;
}

/* ---------------------------------------------------------------- results kept in memory */

typedef struct memo_entry {
    char key[KEY_MAX];
    rt_fused_tuning t;
} memo_entry;

#define MEMO_MAX 64
static pthread_mutex_t g_memo_lock = PTHREAD_MUTEX_INITIALIZER;
static memo_entry g_memo[MEMO_MAX];
static int g_memo_n, g_memo_next;

static bool memo_get(const char *key, rt_fused_tuning *t)
{
    bool found = false;
    pthread_mutex_lock(&g_memo_lock);
    for (int i = 0; i < g_memo_n && !found; i++)
        if (strcmp(g_memo[i].key, key) == 0) {
            *t = g_memo[i].t;
            found = true;
        }
    pthread_mutex_unlock(&g_memo_lock);
    return found;
}

static void memo_put(const char *key, rt_fused_tuning t)
{
    pthread_mutex_lock(&g_memo_lock);
    memo_entry *e = &g_memo[g_memo_n < MEMO_MAX ? g_memo_n++ : g_memo_next++ % MEMO_MAX];
    snprintf(e->key, sizeof e->key, "%s", key);
    e->t = t;
    pthread_mutex_unlock(&g_memo_lock);
}

void rt_fused_tune_reset(void)
{
    pthread_mutex_lock(&g_memo_lock);
    g_memo_n = g_memo_next = 0;
    pthread_mutex_unlock(&g_memo_lock);
}

/* ---------------------------------------------------------------- candidates' kernels */

typedef struct cand {
    rt_fused_tuning t;
    char *src;
    cg_cuda_plan plan;
    const char *names[CG_CUDA_MAX_LAUNCH];
    char label[64];
    rt_kernel_req req;
    void *cubin;
    size_t size;
    double ms; /* < 0: not timed */
} cand;

typedef struct tune_job {
    cand *c;
    int n, next;
    double deadline;
    pthread_mutex_t lock;
} tune_job;

/* Generates each candidate; drops those that do not generate (do not fit)
 * and those that come out as a tiling already in the list. */
static int generate(rt_fused *m, int64_t batch, const rt_fused_tuning *t, int n, cand *c)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        cg_cuda_config cfg;
        rt_fused_config(m, batch, false, &cfg);
        rt_fused_tuning_apply(t[i], &cfg);
        cand *x = &c[k];
        *x = (cand){.t = t[i], .ms = -1};
        if (cg_cuda_generate(&m->sched, &cfg, &x->src, &x->plan) != RNNC_OK)
            continue;
        bool dup = false;
        for (int j = 0; j < k && !dup; j++)
            dup = strcmp(c[j].plan.tuning, x->plan.tuning) == 0;
        if (dup) {
            free(x->src);
            continue;
        }
        rt_fused_request(m, x->src, &x->plan, batch, x->names, x->label, &x->req);
        k++;
    }
    return k;
}

static void *compile_worker(void *arg)
{
    tune_job *j = arg;
    for (;;) {
        pthread_mutex_lock(&j->lock);
        int i = j->next++;
        pthread_mutex_unlock(&j->lock);
        if (i >= j->n || (i > 0 && cm_now_ms() > j->deadline))
            return NULL;
        rt_origin o;
        if (rt_cubin_get(&j->c[i].req, &j->c[i].cubin, &j->c[i].size, &o) != RNNC_OK)
            j->c[i].cubin = NULL;
    }
}

/* Compiles the candidates on up to MAX_THREADS threads (NVRTC is
 * single-threaded per program); a thread starts no compile after the
 * deadline, except the heuristic's, which the forward needs anyway. */
static void compile_all(cand *c, int n, double deadline)
{
    tune_job j = {.c = c, .n = n, .deadline = deadline};
    pthread_mutex_init(&j.lock, NULL);
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nt = n < MAX_THREADS ? n : MAX_THREADS;
    if (cpus > 0 && nt > cpus)
        nt = (int)cpus;
    pthread_t th[MAX_THREADS];
    int started = 0;
    for (int i = 1; i < nt; i++)
        if (pthread_create(&th[started], NULL, compile_worker, &j) == 0)
            started++;
    compile_worker(&j);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&j.lock);
}

/* ---------------------------------------------------------------- timing */

/* A model that shares m's weights on the device but has its own kernels
 * and scratch, and generates with tuning t.  Only what a forward reads is
 * copied, so a field added later is never shared by accident. */
static rt_fused *timing_clone(const rt_fused *m, rt_fused_tuning t)
{
    rt_fused *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->spec = m->spec;
    c->spec.layers = 1; /* layer 0's kernels decide the tuning */
    c->sched = m->sched;
    c->sm = m->sm;
    c->sm_count = m->sm_count;
    c->share = m->share;
    c->share_base = m->share_base;
    c->step_macs = m->step_macs;
    c->pdl = m->pdl;
    c->cluster = m->cluster;
    c->bound = m->bound;
    c->cell_hash = m->cell_hash;
    c->plan = m->plan;
    c->wts = m->wts;
    c->fold = m->fold;
    c->wts_floats = m->wts_floats;
    c->fold_floats = m->fold_floats;
    c->arena_wts[0] = m->arena_wts[0];
    c->arena_fold[0] = m->arena_fold[0];
    c->tune_forced = true;
    c->tune_force = t;
    return c;
}

static void timing_release(rt_fused *c)
{
    if (!c)
        return;
    c->wts = c->fold = 0; /* m's */
    rt_fused_free(c);
}

/* Steps to time: enough to average the step kernel, bounded in memory. */
static int64_t timing_steps(const rt_fused *m, int64_t batch)
{
    int64_t w = m->spec.sizes[0].I > m->spec.hout ? m->spec.sizes[0].I : m->spec.hout;
    int64_t t = ((int64_t)4 << 20) / (batch * w > 0 ? batch * w : 1);
    return t < 4 ? 4 : t > 64 ? 64 : t;
}

static void time_all(rt_fused *m, int64_t batch, cand *c, int n, double end)
{
    int64_t T = timing_steps(m, batch);
    size_t nx = (size_t)(T * batch * m->spec.sizes[0].I), ny = (size_t)(T * batch * m->spec.dirs * m->spec.hout);
    float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y);
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; x && i < nx; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    /* a half model reads 16-bit x: the same values, converted in place
     * (each block of the conversion is read before it is overwritten) */
    if (x && m->spec.dtype != RNNC_F32)
        (void)rnnc_convert(x, m->spec.dtype, x, RNNC_F32, (int64_t)nx);
    rnnc_forward_args a = {.seq_len = T, .batch = batch, .x = x, .y = y};
    for (int i = 0; x && y && i < n && (i == 0 || cm_now_ms() < end); i++) {
        if (!c[i].cubin)
            continue;
        rt_fused *k = timing_clone(m, c[i].t);
        if (k && rt_fused_time_forward(k, &a, 1, 5, &c[i].ms) != RNNC_OK)
            c[i].ms = -1;
        timing_release(k);
    }
    free(x);
    free(y);
}

static double budget_ms(void)
{
    const char *e = getenv("RNNC_AUTOTUNE_MS");
    char *end = NULL;
    double v = e && *e ? strtod(e, &end) : DEFAULT_BUDGET_MS;
    return end && *end ? DEFAULT_BUDGET_MS : v < 0 ? 0 : v;
}

/* Candidates compiled and timed; the fastest into *best.  False (nothing
 * timed) leaves *best alone. */
static bool autotune(rt_fused *m, int64_t batch, rt_fused_tuning *best, char *note, size_t n_note)
{
    double t0 = cm_now_ms(), budget = budget_ms();
    rt_fused_tuning list[MAX_CANDIDATES];
    cand *c = calloc(MAX_CANDIDATES, sizeof *c); /* kernel plans: too large for the stack */
    if (!c)
        return false;
    int share = rt_fused_share_at(m, batch), sms = m->sm_count / share;
    int n = rt_fused_candidates(batch, m->spec.sizes[0].H, sms, rt_dtype_is_half(m->spec.dtype),
                                list, MAX_CANDIDATES);
    n = generate(m, batch, list, n, c);
    compile_all(c, n, t0 + 0.75 * budget);
    double t_compiled = cm_now_ms();
    /* The compiled cubins reach the timing clones through a bundle: it
     * works with the disk cache off, and costs no second read. */
    rt_bundle *b = NULL;
    bool reg = rt_bundle_create(&b) == RNNC_OK;
    for (int i = 0; reg && i < n; i++)
        if (c[i].cubin && rt_bundle_add(b, &c[i].req, c[i].cubin, c[i].size) != RNNC_OK)
            reg = false;
    /* Compiles that overran the budget (NVRTC took 2.8 s for the ten
     * candidates at B = 128, I = H = 512 on the H100 machine, against 2 s)
     * would leave only the heuristic timed: the timing keeps a quarter. */
    double end = t0 + budget > t_compiled + 0.25 * budget ? t0 + budget : t_compiled + 0.25 * budget;
    if (reg && rt_bundle_register(b) == RNNC_OK) {
        time_all(m, batch, c, n, end);
        rt_bundle_unregister(b);
    }
    rt_bundle_destroy(b);
    int w = -1, timed = 0;
    for (int i = 0; i < n; i++) {
        if (c[i].ms >= 0 && (w < 0 || c[i].ms < c[w].ms))
            w = i;
        timed += c[i].ms >= 0;
        free(c[i].src);
        free(c[i].cubin);
    }
    if (w >= 0) {
        *best = c[w].t;
        snprintf(note, n_note, " (%d of %d candidates timed; %.0f ms compiling, %.0f ms "
                 "timing; heuristic %.4f ms, chosen %.4f ms for %lld steps)", timed, n,
                 t_compiled - t0, cm_now_ms() - t_compiled, c[0].ms, c[w].ms,
                 (long long)timing_steps(m, batch));
    }
    free(c);
    return w >= 0;
}

/* ---------------------------------------------------------------- the choice */

/* RNNC_FUSED_TILE: "ut,bt,threads[,rr,bb[,ex[,op]]]", or the tuning text
 * as RNNC_LOG=info prints it and `rnnc dump --tuning` takes it ("nt=512
 * rr=8 bb=8 op=1": any of the fields, in any order). */
static bool from_env(rt_fused_tuning *t)
{
    const char *e = getenv("RNNC_FUSED_TILE");
    int ut = 0, bt = 0, nt = 0, rr = 0, bb = 0, ex = 0, op = 0;
    if (e && strchr(e, '='))
        return rt_fused_tuning_parse_loose(e, t);
    if (!e || sscanf(e, "%d,%d,%d,%d,%d,%d,%d", &ut, &bt, &nt, &rr, &bb, &ex, &op) < 1)
        return false;
    *t = (rt_fused_tuning){ut > 0 ? ut : 0, bt > 0 ? bt : 0, nt > 0 ? nt : 0,
                           cg_cuda_reg_tile_ok(rr) ? rr : 0, cg_cuda_reg_tile_ok(bb) ? bb : 0,
                           ex == 1 || ex == 2 ? ex : 0, op == 1};
    return true;
}

static bool autotune_off(void)
{
    return cm_env_is("RNNC_AUTOTUNE", "0");
}

/* Timing needs the weights on the device and NVRTC for the candidates. */
static bool can_time(const rt_fused *m)
{
    return m->bound && m->wts && rt_nvrtc_available() && rt_cuda_available();
}

static const char *lookup(rt_fused *m, int64_t batch, const char *key, rt_fused_tuning *t,
                          char *note, size_t n_note)
{
    char text[128];
    if (m->tune_forced) {
        *t = m->tune_force;
        return "a candidate";
    }
    if (from_env(t))
        return "RNNC_FUSED_TILE";
    if (memo_get(key, t))
        return "autotuning earlier in this process";
    if (rt_bundle_lookup_tuning(key, text, sizeof text) && rt_fused_tuning_parse(text, t))
        return "the loaded bundle";
    if (rt_tuning_get(key, text, sizeof text) == RNNC_OK && rt_fused_tuning_parse(text, t))
        return "the tuning record";
    *t = (rt_fused_tuning){0};
    if (autotune_off())
        return "the heuristic (RNNC_AUTOTUNE=0)";
    if (!can_time(m))
        return "the heuristic (no timing possible here)";
    if (!autotune(m, batch, t, note, n_note)) {
        memo_put(key, *t); /* do not try again in this process */
        return "the heuristic (no candidate could be timed)";
    }
    rt_fused_tuning_text(*t, text, sizeof text);
    rt_tuning_put(key, text);
    memo_put(key, *t);
    return "autotuning";
}

void rt_fused_choose(rt_fused *m, int64_t batch, rt_fused_tuning *t, const char **from)
{
    char key[KEY_MAX], text[64], note[256] = "";
    rt_fused_shape_key(m, batch, key, sizeof key);
    *from = lookup(m, batch, key, t, note, sizeof note);
    if (!m->tune_forced && cm_log_enabled("info")) {
        /* where two kernels may run at once, whether they do at this batch */
        const char *share = m->share_base < 2                  ? ""
                            : rt_fused_share_at(m, batch) > 1 ? "; two kernels at once"
                                                              : "; one kernel at a time";
        rt_fused_tuning_text(*t, text, sizeof text);
        fprintf(stderr, "rnnc: tuning of %s B=%lld (sm_%d%s): %s from %s%s\n",
                m->spec.fn[0]->name, (long long)batch, m->sm, share, text, *from, note);
    }
}

#endif /* RT_HAVE_CUDA_H */
