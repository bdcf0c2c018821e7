/*
 * conv_fused.c: the handle's LRU of graph plans, and the two calls that run
 * through it: the plain forward y = alpha * conv(x), and the fused
 * y = act(alpha1 * conv(x) + alpha2 * z + bias), with the unfused calls
 * where no engine takes the graph.  A call in steady state looks its plan
 * up and executes it: nothing is created, allocated or synchronised.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_fallback/conv.h"

/* ---------------------------------------------------------------- the LRU */

void fb_conv_plans_clear(rnnc_conv_handle *h)
{
    for (int i = 0; i < h->n_plans; i++)
        fb_conv_plan_free(&h->plans[i]);
    h->n_plans = 0;
}

static void evict_lru(rnnc_conv_handle *h)
{
    int old = 0;
    for (int i = 1; i < h->n_plans; i++)
        if (h->plans[i].last_use < h->plans[old].last_use)
            old = i;
    fb_conv_plan_free(&h->plans[old]);
    h->plans[old] = h->plans[--h->n_plans];
}

rnnc_status fb_conv_plans_resize(rnnc_conv_handle *h, int capacity)
{
    while (h->n_plans > capacity)
        evict_lru(h);
    fb_conv_entries_trim(h, capacity);
    fb_conv_plan *p = realloc(h->plans, (size_t)capacity * sizeof *p);
    if (!p)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "conv plan cache of %d", capacity);
    h->plans = p;
    fb_conv_entry *e = realloc(h->entries, (size_t)capacity * sizeof *e);
    if (!e)
        return err_fail(RNNC_ERR_OUT_OF_MEMORY, "conv descriptor cache of %d", capacity);
    h->entries = e;
    h->plan_cap = capacity;
    return RNNC_OK;
}

static fb_conv_plan *plan_find(rnnc_conv_handle *h, const fb_conv_key *k, uint64_t hash)
{
    for (int i = 0; i < h->n_plans; i++)
        if (h->plans[i].hash == hash && fb_conv_key_equal(&h->plans[i].key, k)) {
            h->plans[i].last_use = ++h->clock;
            return &h->plans[i];
        }
    return NULL;
}

static void plan_drop(rnnc_conv_handle *h, fb_conv_plan *p)
{
    fb_conv_plan_free(p);
    *p = h->plans[--h->n_plans];
}

/* Builds the plan for k into a new LRU slot, the engine of the process-wide
 * cache's choice where there is one (no second search in a new handle),
 * and records the choice. */
static rnnc_status plan_add(rnnc_conv_handle *h, const fb_conv_geom *g,
                            const rnnc_conv_epilogue *e, const void *const ptr[5],
                            const fb_conv_key *k, uint64_t hash, fb_conv_plan **out)
{
    fb_conv_choice ch;
    int64_t want = fb_conv_cache_get(k, &ch) && ch.api == FB_CONV_GRAPH ? ch.algo : -1;
    if (h->n_plans == h->plan_cap)
        evict_lru(h);
    fb_conv_plan *p = &h->plans[h->n_plans];
    rnnc_status st = fb_conv_plan_build(h, g, e, ptr, want, p);
    if (st != RNNC_OK)
        return st;
    p->key = *k;
    p->hash = hash;
    p->last_use = ++h->clock;
    h->n_plans++;
    ch = (fb_conv_choice){(int)p->engine, 0, (size_t)p->workspace, FB_CONV_GRAPH};
    st = fb_conv_cache_put(k, &ch);
    if (st != RNNC_OK) {
        plan_drop(h, p);
        return st;
    }
    *out = p;
    return RNNC_OK;
}

/* Runs the graph of k: its cached plan, or a new one (*built says so).  A
 * cached plan that fails (its workspace no longer fits) is built afresh. */
static rnnc_status graph_run(rnnc_conv_handle *h, const fb_conv_geom *g,
                             const rnnc_conv_epilogue *e, const void *const ptr[5],
                             const fb_conv_key *k, const char *what, fb_conv_plan **built)
{
    uint64_t hash = fb_conv_key_hash(k);
    fb_conv_plan *p = plan_find(h, k, hash);
    rnnc_status st = p ? fb_conv_plan_execute(h, p, ptr) : RNNC_ERR_CUDNN;
    *built = NULL;
    if (st != RNNC_OK) {
        if (p)
            plan_drop(h, p);
        st = plan_add(h, g, e, ptr, k, hash, &p);
        if (st == RNNC_OK && (st = fb_conv_plan_execute(h, p, ptr)) != RNNC_OK)
            plan_drop(h, p);
        if (st != RNNC_OK)
            return st;
        *built = p;
    }
    snprintf(h->last, sizeof h->last, "%s graph engine %lld (ws %lld B)", what,
             (long long)p->engine, (long long)p->workspace);
    return RNNC_OK;
}

/* ---------------------------------------------------------------- keys */

static void graph_key(fb_conv_key *k, const fb_conv_geom *g, const rnnc_conv_epilogue *e,
                      const void *const ptr[5])
{
    int ep = (e->z != NULL) | (e->bias != NULL) << 1 | e->relu << 2;
    ep |= (e->z ? fb_conv_alignment(e->z) : 0) << 8;
    ep |= (e->bias ? fb_conv_alignment(e->bias) : 0) << 16;
    /* An empty epilogue is the plain forward: the same plan either way. */
    fb_conv_key_make(k, g, ep ? RNNC_CONV_FUSED : RNNC_CONV_FORWARD, ep, ptr);
    k->api = FB_CONV_GRAPH;
    memcpy(&k->alpha_bits[0], &e->alpha1, sizeof e->alpha1);
    memcpy(&k->alpha_bits[1], &e->alpha2, sizeof e->alpha2);
}

void fb_conv_forward_key(fb_conv_key *k, const fb_conv_geom *g, float alpha,
                         const void *const p[3])
{
    rnnc_conv_epilogue e = {.alpha1 = alpha, .alpha2 = 1.0f};
    const void *ptr[5] = {p[0], p[1], p[2], NULL, NULL};
    graph_key(k, g, &e, ptr);
}

rnnc_status fb_conv_graph_forward(rnnc_conv_handle *h, const fb_conv_geom *g,
                                  const fb_conv_key *k, float alpha, const void *const p[3],
                                  double *timed_ms)
{
    *timed_ms = 0;
    fb_conv_choice ch;
    if (fb_conv_cache_get(k, &ch) && ch.api == FB_CONV_LEGACY)
        return RNNC_ERR_UNSUPPORTED; /* timed before: a legacy algorithm won */
    rnnc_conv_epilogue e = {.alpha1 = alpha, .alpha2 = 1.0f};
    const void *ptr[5] = {p[0], p[1], p[2], NULL, NULL};
    fb_conv_plan *built = NULL;
    rnnc_status st = graph_run(h, g, &e, ptr, k, "fwd", &built);
    if (st == RNNC_OK && built)
        *timed_ms = built->ms;
    return st;
}

/* ---------------------------------------------------------------- unfused */

/* The bias as a [1, K, 1...] tensor, made once per entry. */
static rnnc_status bias_desc(const fb_conv_geom *g, fb_conv_entry *en)
{
    if (en->bias)
        return RNNC_OK;
    int dims[5] = {1, (int)g->y[1], 1, 1, 1}, strides[5] = {(int)g->y[1], 1, 1, 1, 1};
    int n = g->rank < 4 ? 4 : g->rank;
    rnnc_status st = fb_cudnn_check(cudnnCreateTensorDescriptor(&en->bias),
                                    "cudnnCreateTensorDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetTensorNdDescriptor(en->bias, en->d.dtype, n, dims, strides),
                            "cudnnSetTensorNdDescriptor(bias)");
    if (st != RNNC_OK && en->bias) {
        cudnnDestroyTensorDescriptor(en->bias);
        en->bias = NULL;
    }
    return st;
}

static rnnc_status relu_desc(rnnc_conv_handle *h)
{
    if (h->relu)
        return RNNC_OK;
    rnnc_status st = fb_cudnn_check(cudnnCreateActivationDescriptor(&h->relu),
                                    "cudnnCreateActivationDescriptor");
    if (st == RNNC_OK)
        st = fb_cudnn_check(cudnnSetActivationDescriptor(h->relu, CUDNN_ACTIVATION_RELU,
                                                         CUDNN_NOT_PROPAGATE_NAN, 0.0),
                            "cudnnSetActivationDescriptor");
    if (st != RNNC_OK && h->relu) {
        cudnnDestroyActivationDescriptor(h->relu);
        h->relu = NULL;
    }
    return st;
}

/* conv, then z, bias and ReLU as separate cuDNN calls, on y in place. */
static rnnc_status epilogue_steps(rnnc_conv_handle *h, const fb_conv_geom *g,
                                  const rnnc_conv_epilogue *e, void *y)
{
    fb_conv_key k;
    fb_conv_key_make(&k, g, RNNC_CONV_FUSED, 0, NULL);
    fb_conv_entry *en = NULL;
    rnnc_status st = fb_conv_entry_get(h, g, &k, &en);
    if (st != RNNC_OK)
        return st;
    const float one = 1.0f, zero = 0.0f;
    cudnnTensorDescriptor_t yd = en->d.y;
    if (e->z)
        st = fb_cudnn_check(cudnnAddTensor(h->dnn, &e->alpha2, yd, e->z, &one, yd, y),
                            "cudnnAddTensor(z)");
    if (st == RNNC_OK && e->bias && (st = bias_desc(g, en)) == RNNC_OK)
        st = fb_cudnn_check(cudnnAddTensor(h->dnn, &one, en->bias, e->bias, &one, yd, y),
                            "cudnnAddTensor(bias)");
    if (st == RNNC_OK && e->relu && (st = relu_desc(h)) == RNNC_OK)
        st = fb_cudnn_check(cudnnActivationForward(h->dnn, h->relu, &one, yd, y, &zero, yd, y),
                            "cudnnActivationForward");
    return st;
}

static rnnc_status unfused(rnnc_conv_handle *h, const fb_conv_geom *g, const rnnc_conv_epilogue *e,
                           const void *x, const void *w, void *y)
{
    const void *p[3] = {x, w, y};
    rnnc_status st = fb_conv_run(h, g, RNNC_CONV_FORWARD, p, e->alpha1, 0.0f);
    if (st != RNNC_OK)
        return st;
    char conv_algo[sizeof h->last];
    memcpy(conv_algo, h->last, sizeof conv_algo);
    st = epilogue_steps(h, g, e, y);
    snprintf(h->last, sizeof h->last, "unfused: %.100s%s%s%s", conv_algo, e->z ? " + add z" : "",
             e->bias ? " + add bias" : "", e->relu ? " + relu" : "");
    return st;
}

/* ---------------------------------------------------------------- entry */

rnnc_status fb_conv_fused(rnnc_conv_handle *h, const fb_conv_geom *g, const rnnc_conv_epilogue *e,
                          const void *x, const void *w, void *y)
{
    if (e->unfused)
        return unfused(h, g, e, x, w, y);
    const void *ptr[5] = {x, w, y, e->z, e->bias};
    fb_conv_key k;
    graph_key(&k, g, e, ptr);
    fb_conv_plan *built = NULL;
    if (graph_run(h, g, e, ptr, &k, "fused", &built) == RNNC_OK)
        return RNNC_OK;
    return unfused(h, g, e, x, w, y);
}
