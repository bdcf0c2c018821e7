/*
 * test_cache.c: the disk level of the kernel cache, with NVRTC and no GPU:
 * a cold compile writes an entry that a second process finds; damaged
 * entries are recompiled and replaced; a read-only directory works
 * uncached with one warning; 8 processes racing leave one good entry;
 * eviction keeps the size under the limit; keys and tuning records;
 * several requests compiled at once (rt_cubin_get_all).
 *
 * The binary re-runs itself as the "second process":
 *   test_cache --child ORIGIN TUNING   exits 0 iff rt_cubin_get succeeds
 *                                      with ORIGIN ("any" for either).
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#include "runtime/cache/cache.h"

static const char k_src[] = "extern \"C\" __global__ void scale(float *x, float a, int n)\n"
                            "{\n"
                            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                            "    if (i < n)\n"
                            "        x[i] *= a;\n"
                            "}\n";
static const char *const k_names[] = {"scale"};
static char g_self[4096];

static rt_kernel_req make_req(const char *tuning)
{
    rt_kernel_req r = {.source = k_src, .name = "scale", .kernels = k_names, .n_kernels = 1,
                       .sm = 80, .tuning = tuning};
    return r;
}

static rt_origin get(const char *tuning, void **cubin, size_t *size)
{
    rt_kernel_req r = make_req(tuning);
    rt_origin o = RT_FROM_MEMORY;
    assert_ok(rt_cubin_get(&r, cubin, size, &o));
    return o;
}

static rt_origin get_free(const char *tuning)
{
    void *cubin = NULL;
    size_t size = 0;
    rt_origin o = get(tuning, &cubin, &size);
    free(cubin);
    return o;
}

static char *entry_path(const char *tuning)
{
    rt_kernel_req r = make_req(tuning);
    rt_cache_key k;
    static char path[4200];
    assert_ok(rt_cache_key_of(&r, r.sm, &k));
    assert_true(rt_cache_entry_path(k, path, sizeof path));
    return path;
}

static int child_main(const char *want, const char *tuning)
{
    rt_kernel_req r = make_req(tuning);
    void *cubin = NULL;
    size_t size = 0;
    rt_origin o;
    if (rt_cubin_get(&r, &cubin, &size, &o) != RNNC_OK) {
        fprintf(stderr, "child: %s\n", rnnc_last_error());
        return 2;
    }
    free(cubin);
    if (strcmp(want, "any") != 0 && strcmp(want, rt_origin_name(o)) != 0) {
        fprintf(stderr, "child: got %s, want %s\n", rt_origin_name(o), want);
        return 1;
    }
    return 0;
}

/* Starts `self --child want tuning`, stderr to err_path if given. */
static pid_t spawn(const char *want, const char *tuning, const char *err_path)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (err_path && !freopen(err_path, "w", stderr))
            _exit(3);
        execl(g_self, g_self, "--child", want, tuning, (char *)NULL);
        _exit(4);
    }
    return pid;
}

static int wait_exit(pid_t pid)
{
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

typedef struct fixture {
    char *dir;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = tu_tmpdir();
    if (!f->dir)
        return -1;
    setenv("RNNC_CACHE_DIR", f->dir, 1);
    unsetenv("RNNC_CACHE");
    unsetenv("RNNC_CACHE_MAX_MB");
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tu_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static int count_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return 0;
    for (struct dirent *e; (e = readdir(d));) {
        const char *f = e->d_name;
        if (strcmp(f, ".") == 0 || strcmp(f, "..") == 0)
            continue;
        if (prefix[0] == '\0' ? f[0] != '.' : strncmp(f, prefix, strlen(prefix)) == 0)
            n++;
    }
    closedir(d);
    return n;
}

static char *kernels_dir(const fixture *f)
{
    static char p[4200];
    snprintf(p, sizeof p, "%s/kernels", f->dir);
    return p;
}

static void test_cold_then_second_process(void **state)
{
    fixture *f = *state;
    void *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    assert_int_equal(get("t1", &a, &na), RT_FROM_COMPILE);
    struct stat st;
    assert_int_equal(stat(entry_path("t1"), &st), 0);
    assert_int_equal((size_t)st.st_size, na + 128);
    assert_int_equal(count_files(kernels_dir(f), ""), 1);
    assert_int_equal(wait_exit(spawn("disk", "t1", NULL)), 0);
    assert_int_equal(get("t1", &b, &nb), RT_FROM_DISK);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    free(a);
    free(b);
}

static void test_disabled(void **state)
{
    fixture *f = *state;
    setenv("RNNC_CACHE", "0", 1);
    assert_int_equal(get_free("off"), RT_FROM_COMPILE);
    assert_int_equal(get_free("off"), RT_FROM_COMPILE);
    char buf[64];
    assert_false(rt_cache_dir(buf, sizeof buf));
    unsetenv("RNNC_CACHE");
    assert_int_equal(count_files(kernels_dir(f), ""), 0);
}

static void *read_file(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    *n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    void *buf = malloc(*n);
    assert_int_equal(fread(buf, 1, *n, fp), *n);
    fclose(fp);
    return buf;
}

typedef void (*damage_fn)(unsigned char *file, size_t *n);

static void flip_payload(unsigned char *p, size_t *n)
{
    p[128 + (*n - 128) / 2] ^= 0x10;
}

static void flip_header(unsigned char *p, size_t *n)
{
    (void)n;
    p[20] ^= 0x01; /* inside the key */
}

static void truncate_half(unsigned char *p, size_t *n)
{
    (void)p;
    *n = 128 + (*n - 128) / 2;
}

static void truncate_header(unsigned char *p, size_t *n)
{
    (void)p;
    *n = 40;
}

/* A well-formed entry of a future format (its header checksum is right). */
static void other_version(unsigned char *p, size_t *n)
{
    (void)n;
    uint32_t v = RT_CACHE_FORMAT + 1;
    memcpy(p + 8, &v, sizeof v);
    uint64_t h = XXH3_64bits(p, 120);
    memcpy(p + 120, &h, sizeof h);
}

static void check_recovers(const char *tuning, damage_fn damage)
{
    void *good = NULL, *again = NULL;
    size_t n_good = 0, n_file = 0, n_again = 0;
    get(tuning, &good, &n_good); /* compile or disk: either way a good entry now */
    const char *path = entry_path(tuning);
    unsigned char *file = read_file(path, &n_file);
    damage(file, &n_file);
    assert_int_equal(tu_write_file(path, file, n_file), 0);
    assert_int_equal(get_free(tuning), RT_FROM_COMPILE);
    assert_int_equal(get(tuning, &again, &n_again), RT_FROM_DISK); /* replaced */
    assert_int_equal(n_again, n_good);
    assert_memory_equal(again, good, n_good);
    free(file);
    free(good);
    free(again);
}

static void test_damaged_entries_recompiled(void **state)
{
    (void)state;
    check_recovers("dmg", flip_payload);
    check_recovers("dmg", flip_header);
    check_recovers("dmg", truncate_half);
    check_recovers("dmg", truncate_header);
    check_recovers("dmg", other_version);
}

static void test_readonly_dir_one_warning(void **state)
{
    fixture *f = *state;
    char dir[4200], err[4200];
    /* chmod does not stop root, a file in the way of the path stops everyone. */
    snprintf(dir, sizeof dir, "%s/blocker/cache", f->dir);
    snprintf(err, sizeof err, "%s/blocker", f->dir);
    assert_int_equal(tu_write_file(err, "x", 1), 0);
    setenv("RNNC_CACHE_DIR", dir, 1);
    snprintf(err, sizeof err, "%s/stderr.txt", f->dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(err, "w", stderr))
            _exit(3);
        /* two different kernels, two failed writes, one warning */
        int rc = child_main("compile", "ro1") || child_main("compile", "ro2");
        fflush(stderr); /* _exit does not flush, and the reopened stderr is buffered */
        _exit(rc);
    }
    assert_int_equal(wait_exit(pid), 0);
    size_t n = 0;
    char *text = read_file(err, &n);
    text = realloc(text, n + 1);
    text[n] = '\0';
    char *first = strstr(text, "not writable");
    bool once = first && !strstr(first + 1, "not writable");
    if (!once)
        fprintf(stderr, "child's stderr:\n%s\n", text);
    free(text);
    assert_true(once);
    setenv("RNNC_CACHE_DIR", f->dir, 1);
}

static void test_eight_processes_race(void **state)
{
    fixture *f = *state;
    pid_t pids[8];
    for (int i = 0; i < 8; i++)
        pids[i] = spawn("any", "race", NULL);
    for (int i = 0; i < 8; i++)
        assert_int_equal(wait_exit(pids[i]), 0);
    assert_int_equal(count_files(kernels_dir(f), ""), 1);
    assert_int_equal(count_files(kernels_dir(f), ".tmp-"), 0);
    assert_int_equal(get_free("race"), RT_FROM_DISK);
}

static void *thread_get(void *arg)
{
    rt_kernel_req r = make_req("threads");
    void *cubin = NULL;
    size_t size = 0;
    rt_origin o;
    *(rnnc_status *)arg = rt_cubin_get(&r, &cubin, &size, &o);
    free(cubin);
    return NULL;
}

static void test_threads_share_one_entry(void **state)
{
    fixture *f = *state;
    pthread_t t[4];
    rnnc_status s[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(pthread_create(&t[i], NULL, thread_get, &s[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(s[i], RNNC_OK);
    }
    assert_int_equal(count_files(kernels_dir(f), ""), 1);
    assert_int_equal(get_free("threads"), RT_FROM_DISK);
}

/* rt_cubin_get_all: each request's cubin as rt_cubin_get makes it (the
 * requests on threads of their own, the cache off so that all compile);
 * one that does not compile fails the call, named in the message, and no
 * cubin is left; more than 8 at once is refused. */
static void test_batch(void **state)
{
    (void)state;
    static const char k_add[] = "extern \"C\" __global__ void scale(float *x, float a, int n)\n"
                                "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += a; }\n";
    setenv("RNNC_CACHE", "0", 1);
    rt_kernel_req r[3] = {make_req("b0"), make_req("b1"), make_req("b2")};
    r[1].source = k_add;
    const rt_kernel_req *reqs[3] = {&r[0], &r[1], &r[2]};
    void *one[3], *all[3];
    size_t n1[3], na[3];
    rt_origin o;
    for (int i = 0; i < 3; i++)
        assert_ok(rt_cubin_get(&r[i], &one[i], &n1[i], &o));
    assert_ok(rt_cubin_get_all(reqs, 3, all, na));
    /* each output is its own request's: the two sources' cubins differ */
    assert_true(na[0] != na[1] || memcmp(all[0], all[1], na[0]) != 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(na[i], n1[i]);
        assert_memory_equal(all[i], one[i], na[i]);
        free(one[i]);
        free(all[i]);
    }
    r[1].source = "extern \"C\" __global__ void scale(float *x) { x[0] = ; }\n";
    r[1].name = "broken";
    assert_int_equal(rt_cubin_get_all(reqs, 3, all, na), RNNC_ERR_NVRTC);
    assert_non_null(strstr(rnnc_last_error(), "broken"));
    for (int i = 0; i < 3; i++)
        assert_null(all[i]);
    const rt_kernel_req *many[9] = {&r[0], &r[0], &r[0], &r[0], &r[0], &r[0], &r[0], &r[0], &r[0]};
    void *c9[9];
    size_t s9[9];
    assert_int_equal(rt_cubin_get_all(many, 9, c9, s9), RNNC_ERR_INVALID_ARG);
    unsetenv("RNNC_CACHE");
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void test_eviction_lru(void **state)
{
    fixture *f = *state;
    void *c = NULL;
    size_t n = 0;
    assert_int_equal(get("e0", &c, &n), RT_FROM_COMPILE);
    free(c);
    /* Room for two entries and a half: the third write must evict one. */
    double mb = 2.5 * (double)(n + 128) / (1024.0 * 1024.0);
    char val[64];
    snprintf(val, sizeof val, "%.9f", mb);
    setenv("RNNC_CACHE_MAX_MB", val, 1);
    /* File times tick at the kernel's coarse clock (a few ms): pause so each
     * use below gets an mtime of its own. */
    const struct timespec tick = {0, 20 * 1000 * 1000};
    assert_int_equal(get_free("e1"), RT_FROM_COMPILE);
    nanosleep(&tick, NULL);
    assert_int_equal(get_free("e0"), RT_FROM_DISK); /* e0 is now more recent than e1 */
    nanosleep(&tick, NULL);
    assert_int_equal(get_free("e2"), RT_FROM_COMPILE);
    assert_true(exists(entry_path("e0")));
    assert_false(exists(entry_path("e1")));
    assert_true(exists(entry_path("e2")));
    assert_int_equal(count_files(kernels_dir(f), ""), 2);
    assert_int_equal(get_free("e3"), RT_FROM_COMPILE);
    assert_int_equal(count_files(kernels_dir(f), ""), 2);
    assert_false(exists(entry_path("e0")));
    unsetenv("RNNC_CACHE_MAX_MB");
}

static void test_key_covers_inputs(void **state)
{
    (void)state;
    rt_kernel_req r = make_req("k");
    rt_cache_key base, k;
    assert_ok(rt_cache_key_of(&r, 80, &base));
    assert_ok(rt_cache_key_of(&r, 80, &k));
    assert_true(k.lo == base.lo && k.hi == base.hi);
    assert_ok(rt_cache_key_of(&r, 90, &k));
    assert_false(k.lo == base.lo && k.hi == base.hi);
    r.tuning = "k2";
    assert_ok(rt_cache_key_of(&r, 80, &k));
    assert_false(k.lo == base.lo && k.hi == base.hi);
    r.tuning = NULL;
    assert_ok(rt_cache_key_of(&r, 80, &k));
    assert_false(k.lo == base.lo && k.hi == base.hi);
    r = make_req("k");
    const char *opts[] = {"-DA=1"};
    r.opts = opts;
    r.n_opts = 1;
    assert_ok(rt_cache_key_of(&r, 80, &k));
    assert_false(k.lo == base.lo && k.hi == base.hi);
    r = make_req("k");
    r.source = "extern \"C\" __global__ void scale(float *x) {}\n";
    assert_ok(rt_cache_key_of(&r, 80, &k));
    assert_false(k.lo == base.lo && k.hi == base.hi);
    r.n_opts = 2; /* with opts NULL */
    assert_status(rt_cache_key_of(&r, 80, &k), RNNC_ERR_INVALID_ARG);
}

static void test_tuning_records(void **state)
{
    (void)state;
    char buf[128];
    assert_status(rt_tuning_get("lstm B=64 sm_90", buf, sizeof buf), RNNC_ERR_NOT_FOUND);
    assert_ok(rt_tuning_put("lstm B=64 sm_90", "tile=16x16 threads=256 w=smem"));
    assert_ok(rt_tuning_put("lstm B=1 sm_90", "tile=8x32"));
    assert_ok(rt_tuning_get("lstm B=64 sm_90", buf, sizeof buf));
    assert_string_equal(buf, "tile=16x16 threads=256 w=smem");
    assert_ok(rt_tuning_put("lstm B=64 sm_90", "tile=32x8"));
    assert_ok(rt_tuning_get("lstm B=64 sm_90", buf, sizeof buf));
    assert_string_equal(buf, "tile=32x8");
    assert_status(rt_tuning_put("bad\nkey", "x"), RNNC_ERR_INVALID_ARG);
    assert_status(rt_tuning_get("lstm B=1 sm_90", buf, 4), RNNC_ERR_INVALID_ARG);
}

/* The whole cache through the public calls (the command line's words for
 * them are tested by the cli tests; tests/test_cache_api.c covers the API). */
static void test_info_list_clear(void **state)
{
    fixture *f = *state;
    assert_int_equal(get_free("adm"), RT_FROM_COMPILE);
    assert_ok(rt_tuning_put("adm shape", "tile=1"));
    rnnc_cache_summary info;
    assert_ok(rnnc_cache_info(&info));
    assert_string_equal(info.directory, f->dir);
    assert_int_equal(info.kernels, 1);
    assert_int_equal(info.tuning_records, 1);
    rnnc_cache_entries *list = NULL;
    assert_ok(rnnc_cache_list(&list));
    assert_int_equal(rnnc_cache_entries_count(list), 1);
    assert_int_equal(rnnc_cache_entries_get(list, 0)->sm, 80);
    assert_string_equal(rnnc_cache_entries_get(list, 0)->kernel, "scale");
    rnnc_cache_entries_destroy(list);
    rnnc_cache_cleared clear;
    assert_ok(rnnc_cache_clear(&clear));
    assert_int_equal(clear.files, 2);
    assert_int_equal(count_files(kernels_dir(f), ""), 0);
    assert_int_equal(get_free("adm"), RT_FROM_COMPILE);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--child") == 0) {
        /* The parent checks leaks of the same code; LeakSanitizer's exit scan
         * in eight children racing beside NVRTC's threads at once crashed
         * its tracer (signal 11) on a loaded machine, so children skip it. */
        int rc = child_main(argv[2], argv[3]);
        fflush(NULL);
        _exit(rc);
    }
    ssize_t n = readlink("/proc/self/exe", g_self, sizeof g_self - 1);
    if (n <= 0)
        return 1;
    g_self[n] = '\0';
    if (!rt_nvrtc_available()) {
        fprintf(stderr, "NVRTC not available: cache tests skipped\n");
        return TU_SKIP;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_covers_inputs),
        cmocka_unit_test_setup_teardown(test_cold_then_second_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disabled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_entries_recompiled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_readonly_dir_one_warning, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eight_processes_race, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads_share_one_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eviction_lru, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tuning_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_info_list_clear, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
