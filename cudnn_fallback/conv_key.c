/*
 * conv_key.c: the key of a convolution's algorithm choice and the
 * process-wide cache of choices.  Host only: needs neither cudnn.h nor a
 * GPU, so tests/test_cudnn_conv_key.c runs it everywhere cuDNN is built.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "cudnn_fallback/conv.h"

int fb_conv_alignment(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    int align = 1;
    while (align < 16 && a % (uintptr_t)(align * 2) == 0)
        align *= 2;
    return align;
}

void fb_conv_key_make(fb_conv_key *k, const fb_conv_geom *g, rnnc_conv_pass pass, int epilogue,
                      const void *const ptrs[3])
{
    /* memset, not an initialiser: padding bytes must be zero too, since the
     * key is hashed and compared as bytes. */
    memset(k, 0, sizeof *k);
    const rnnc_conv_desc *d = &g->d;
    k->device = d->device;
    k->dtype = (int32_t)d->dtype;
    k->layout = (int32_t)d->layout;
    k->dims = d->spatial_dims;
    k->math = (int32_t)d->math;
    k->deterministic = d->deterministic;
    k->algo_mode = (int32_t)d->algo_mode;
    k->pass = (int32_t)pass;
    k->epilogue = epilogue;
    for (int i = 0; i < 3; i++)
        k->align[i] = ptrs ? fb_conv_alignment(ptrs[i]) : 0;
    k->batch = d->batch;
    k->in_channels = d->in_channels;
    k->out_channels = d->out_channels;
    k->groups = d->groups;
    for (int i = 0; i < d->spatial_dims && i < 3; i++) {
        k->input[i] = d->input[i];
        k->kernel[i] = d->kernel[i];
        k->stride[i] = d->stride[i];
        k->padding[i] = d->padding[i];
        k->dilation[i] = d->dilation[i];
    }
}

uint64_t fb_conv_key_hash(const fb_conv_key *k)
{
    return XXH3_64bits(k, sizeof *k);
}

bool fb_conv_key_equal(const fb_conv_key *a, const fb_conv_key *b)
{
    return memcmp(a, b, sizeof *a) == 0;
}

/* ---------------------------------------------------------------- cache */

#define FB_CONV_BUCKETS 256

typedef struct cache_entry {
    fb_conv_key key;
    uint64_t hash;
    fb_conv_choice choice;
    struct cache_entry *next;
} cache_entry;

static cache_entry *g_buckets[FB_CONV_BUCKETS];
static size_t g_count;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static cache_entry *find(const fb_conv_key *k, uint64_t h)
{
    for (cache_entry *e = g_buckets[h % FB_CONV_BUCKETS]; e; e = e->next)
        if (e->hash == h && fb_conv_key_equal(&e->key, k))
            return e;
    return NULL;
}

bool fb_conv_cache_get(const fb_conv_key *k, fb_conv_choice *out)
{
    uint64_t h = fb_conv_key_hash(k);
    pthread_mutex_lock(&g_lock);
    cache_entry *e = find(k, h);
    if (e)
        *out = e->choice;
    pthread_mutex_unlock(&g_lock);
    return e != NULL;
}

rnnc_status fb_conv_cache_put(const fb_conv_key *k, const fb_conv_choice *c)
{
    uint64_t h = fb_conv_key_hash(k);
    rnnc_status st = RNNC_OK;
    pthread_mutex_lock(&g_lock);
    cache_entry *e = find(k, h);
    if (!e) {
        e = calloc(1, sizeof *e);
        if (e) {
            e->key = *k;
            e->hash = h;
            e->next = g_buckets[h % FB_CONV_BUCKETS];
            g_buckets[h % FB_CONV_BUCKETS] = e;
            g_count++;
        } else {
            st = err_fail(RNNC_ERR_OUT_OF_MEMORY, "convolution algorithm cache entry");
        }
    }
    if (e)
        e->choice = *c;
    pthread_mutex_unlock(&g_lock);
    return st;
}

size_t fb_conv_cache_count(void)
{
    pthread_mutex_lock(&g_lock);
    size_t n = g_count;
    pthread_mutex_unlock(&g_lock);
    return n;
}

void fb_conv_cache_clear(void)
{
    pthread_mutex_lock(&g_lock);
    for (int b = 0; b < FB_CONV_BUCKETS; b++) {
        while (g_buckets[b]) {
            cache_entry *e = g_buckets[b];
            g_buckets[b] = e->next;
            free(e);
        }
    }
    g_count = 0;
    pthread_mutex_unlock(&g_lock);
}

/* ---------------------------------------------------------------- messages */

static size_t put_dims(char *buf, size_t n, const char *name, const int64_t *v, int k, char sep)
{
    size_t at = (size_t)snprintf(buf, n, "%s", name);
    for (int i = 0; i < k && at < n; i++)
        at += (size_t)snprintf(buf + at, n - at, "%s%lld", i ? (sep == 'x' ? "x" : ", ") : "",
                               (long long)v[i]);
    return at < n ? at : n;
}

void fb_conv_describe(const fb_conv_geom *g, char *buf, size_t n)
{
    const rnnc_conv_desc *d = &g->d;
    size_t at = (size_t)snprintf(buf, n, "%d-D %s %s", d->spatial_dims,
                                 d->layout == RNNC_CONV_NHWC ? "NHWC" : "NCHW",
                                 rnnc_dtype_name(d->dtype));
    const char *part[] = {" x [", " w [", " y ["};
    const int64_t *t[] = {g->x, g->w, g->y};
    for (int i = 0; i < 3 && at < n; i++) {
        at += put_dims(buf + at, n - at, part[i], t[i], g->rank, ',');
        if (at < n)
            at += (size_t)snprintf(buf + at, n - at, "]");
    }
    const char *what[] = {" stride ", " pad ", " dilation "};
    const int64_t *v[] = {d->stride, d->padding, d->dilation};
    for (int i = 0; i < 3 && at < n; i++)
        at += put_dims(buf + at, n - at, what[i], v[i], d->spatial_dims, 'x');
    if (at < n)
        snprintf(buf + at, n - at, " groups %lld", (long long)d->groups);
}
