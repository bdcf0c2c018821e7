/* test_files.c: common/'s file writer and reader, and every writer built on
 * them (issue 18): only a regular file is replaced; `-` and /dev/null
 * discard; the umask is honoured; a full disk (RLIMIT_FSIZE) leaves the old
 * file and no temp file; a FIFO or a directory is refused before a byte is
 * read; eight processes writing one bundle, one cache entry and one tuning
 * record at once all succeed and leave one writer's whole file. */
#define _GNU_SOURCE
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "runtime/cache/cache.h"

static char g_dir[4096];

static int group_setup(void **state)
{
    char *d = tu_tmpdir();
    snprintf(g_dir, sizeof g_dir, "%s", d);
    free(d);
    return tu_cache_dir_setup(state);
}

static int group_teardown(void **state)
{
    tu_rmtree(g_dir);
    return tu_cache_dir_teardown(state);
}

static const char *at(const char *name)
{
    static char path[8][4200];
    static int i;
    i = (i + 1) % 8;
    snprintf(path[i], sizeof path[i], "%s/%s", g_dir, name);
    return path[i];
}

/* Files in dir whose name starts with the writer's temp prefix. */
static int temp_files(const char *dir)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += strncmp(e->d_name, CM_TMP_PREFIX, strlen(CM_TMP_PREFIX)) == 0;
    if (d)
        closedir(d);
    return n;
}

static char *slurp(const char *path, size_t *n)
{
    char *buf = NULL;
    cm_why why;
    if (cm_read_file(path, 0, 1 << 20, &buf, n, &why) != RNNC_OK)
        fail_msg("%s", why.text);
    return buf;
}

/* ---------------------------------------------------------------- the writer */

static void writer_replaces_a_regular_file(void **state)
{
    (void)state;
    cm_why why;
    size_t n;
    const char *p = at("plain");
    assert_int_equal(tu_write_file(p, "old contents", 12), 0);
    assert_int_equal(cm_write_file(p, 0, "new", 3, " file", 5, &why), RNNC_OK);
    char *got = slurp(p, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(got, "new file", 8);
    free(got);
    assert_int_equal(temp_files(g_dir), 0);
}

static void writer_refuses_what_is_not_a_regular_file(void **state)
{
    (void)state;
    cm_why why;
    struct stat st;
    assert_int_equal(mkdir(at("adir"), 0700), 0);
    assert_int_equal(mkfifo(at("afifo"), 0600), 0);
    assert_int_equal(tu_write_file(at("target"), "keep", 4), 0);
    assert_int_equal(symlink(at("target"), at("alink")), 0);
    assert_int_equal(symlink(at("nowhere"), at("dangling")), 0);
    const char *const bad[] = {at("adir"), at("afifo"), at("alink"), at("dangling"), "/dev/zero"};
    for (int i = 0; i < 5; i++) {
        if (cm_write_file(bad[i], CM_OUT_DISCARD, "x", 1, NULL, 0, &why) != RNNC_ERR_IO)
            fail_msg("%s was replaced", bad[i]);
        assert_non_null(strstr(why.text, "only a regular file is replaced"));
    }
    assert_int_equal(lstat(at("afifo"), &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(lstat(at("alink"), &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(lstat(at("nowhere"), &st), -1);
    assert_int_equal(stat("/dev/zero", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(temp_files(g_dir), 0);
}

static void writer_discards_where_allowed(void **state)
{
    (void)state;
    cm_why why;
    struct stat st;
    assert_int_equal(cm_write_file("/dev/null", CM_OUT_DISCARD, "x", 1, NULL, 0, &why), RNNC_OK);
    assert_int_equal(stat("/dev/null", &st), 0);
    assert_true(S_ISCHR(st.st_mode));
    assert_int_equal(chdir(g_dir), 0);
    assert_int_equal(cm_write_file("-", CM_OUT_DISCARD, "x", 1, NULL, 0, &why), RNNC_OK);
    assert_int_equal(lstat("-", &st), -1);
    /* without the flag /dev/null is a device like any other */
    assert_int_equal(cm_write_file("/dev/null", 0, "x", 1, NULL, 0, &why), RNNC_ERR_IO);
}

static void writer_honours_the_umask(void **state)
{
    (void)state;
    cm_why why;
    struct stat st;
    const mode_t masks[] = {022, 077, 027, 0};
    mode_t old = umask(0);
    for (int i = 0; i < 4; i++) {
        umask(masks[i]);
        assert_int_equal(cm_write_file(at("moded"), 0, "x", 1, NULL, 0, &why), RNNC_OK);
        assert_int_equal(stat(at("moded"), &st), 0);
        assert_int_equal(st.st_mode & 0777, 0666 & ~masks[i]);
        unlink(at("moded"));
    }
    umask(old);
}

/* ---------------------------------------------------------------- a full disk */


static rt_bundle *small_bundle(const void *payload, size_t n)
{
    static const char *const names[] = {"k"};
    rt_kernel_req r = {.source = "src", .name = "k", .kernels = names, .n_kernels = 1, .sm = 90};
    rt_bundle *b = NULL;
    assert_ok(rt_bundle_create(&b));
    assert_ok(rt_bundle_add(b, &r, payload, n));
    assert_ok(rt_bundle_add_tuning(b, "k B=1 sm_90", "ut=0 bt=16 nt=256"));
    return b;
}

/* RLIMIT_FSIZE stands in for a full disk: a write past it fails (EFBIG). */
static void full_disk_keeps_the_old_file(void **state)
{
    (void)state;
    struct rlimit old, lim;
    size_t big_n = 1 << 16, n;
    unsigned char *big = calloc(1, big_n);
    rnnc_tensors *ts = NULL;
    int64_t shape[1] = {(int64_t)(big_n / 4)};
    assert_ok(rnnc_tensors_create(&ts));
    assert_ok(rnnc_tensors_add(ts, "w", RNNC_F32, 1, shape, big));
    rt_bundle *b = small_bundle(big, big_n);
    const char *const files[] = {at("full.bin"), at("full.safetensors"), at("full.rnncpkg")};
    for (int i = 0; i < 3; i++)
        assert_int_equal(tu_write_file(files[i], "the old file", 12), 0);

    signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = 4096;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    cm_why why;
    rnnc_status s0 = cm_write_file(files[0], 0, big, big_n, NULL, 0, &why);
    rnnc_status s1 = rnnc_tensors_save(ts, files[1]);
    rnnc_status s2 = rt_bundle_save(b, files[2]);
    rt_cache_key k = {42, 43};
    char entry[4200];
    rt_cache_write(k, "k", 90, big, big_n);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);

    assert_int_equal(s0, RNNC_ERR_IO);
    assert_int_equal(s1, RNNC_ERR_IO);
    assert_int_equal(s2, RNNC_ERR_IO);
    for (int i = 0; i < 3; i++) {
        char *got = slurp(files[i], &n);
        assert_int_equal(n, 12);
        assert_memory_equal(got, "the old file", 12);
        free(got);
    }
    assert_int_equal(temp_files(g_dir), 0);
    assert_true(rt_cache_entry_path(k, entry, sizeof entry));
    assert_int_equal(access(entry, F_OK), -1);
    *strrchr(entry, '/') = '\0';
    assert_int_equal(temp_files(entry), 0);
    rt_bundle_destroy(b);
    rnnc_tensors_destroy(ts);
    free(big);
}

/* ---------------------------------------------------------------- the reader */

static void reader_refuses_fifos_and_directories(void **state)
{
    (void)state;
    cm_in in;
    cm_why why;
    char *buf;
    size_t n;
    assert_int_equal(mkfifo(at("rfifo"), 0600), 0);
    alarm(20); /* a reader that blocks on the FIFO fails the test instead of hanging it */
    assert_int_equal(cm_in_open(&in, at("rfifo"), 0, &why), RNNC_ERR_IO);
    assert_non_null(strstr(why.text, "is a FIFO"));
    assert_int_equal(cm_read_file(g_dir, 0, 1 << 20, &buf, &n, &why), RNNC_ERR_IO);
    assert_non_null(strstr(why.text, "is a directory"));
    rnnc_tensors *ts = NULL;
    assert_status(rnnc_tensors_load(&ts, at("rfifo")), RNNC_ERR_IO);
    rt_bundle *b = NULL;
    assert_status(rt_bundle_load(&b, at("rfifo")), RNNC_ERR_IO);
    assert_status(rt_bundle_load(&b, g_dir), RNNC_ERR_IO);
    rnnc_cell *c = NULL;
    assert_status(rnnc_cell_load_file(&c, at("rfifo"), NULL, NULL), RNNC_ERR_IO);
    alarm(0);
    assert_int_equal(cm_in_open(&in, at("nothing"), 0, &why), RNNC_ERR_NOT_FOUND);
}

static void reader_nofollow_and_limits(void **state)
{
    (void)state;
    cm_in in;
    cm_why why;
    char *buf;
    size_t n;
    assert_int_equal(tu_write_file(at("real"), "0123456789", 10), 0);
    assert_int_equal(symlink(at("real"), at("rlink")), 0);
    assert_int_equal(cm_in_open(&in, at("rlink"), CM_IN_NOFOLLOW, &why), RNNC_ERR_IO);
    assert_int_equal(cm_in_open(&in, at("rlink"), 0, &why), RNNC_OK);
    assert_int_equal(in.size, 10);
    cm_in_close(&in);
    assert_int_equal(cm_read_file(at("real"), 0, 9, &buf, &n, &why), RNNC_ERR_FORMAT);
    assert_int_equal(cm_read_file(at("real"), 0, 10, &buf, &n, &why), RNNC_OK);
    assert_int_equal(n, 10);
    assert_int_equal(buf[10], '\0');
    free(buf);
}

static void same_file_by_device_and_inode(void **state)
{
    (void)state;
    assert_int_equal(tu_write_file(at("one"), "1", 1), 0);
    assert_int_equal(tu_write_file(at("two"), "1", 1), 0);
    assert_int_equal(link(at("one"), at("hard")), 0);
    assert_int_equal(symlink(at("one"), at("soft")), 0);
    char dotted[4300];
    snprintf(dotted, sizeof dotted, "%s/./one", g_dir);
    assert_true(cm_same_file(at("one"), at("hard")));
    assert_true(cm_same_file(at("one"), at("soft")));
    assert_true(cm_same_file(at("one"), dotted));
    assert_false(cm_same_file(at("one"), at("two")));
    assert_false(cm_same_file(at("one"), at("absent")));
    char other[4300];
    snprintf(other, sizeof other, "%s/./absent", g_dir);
    assert_true(cm_same_target(at("absent"), other));
    assert_false(cm_same_target(at("absent"), at("absent2")));
}

/* ---------------------------------------------------------------- concurrent writers */

#define WRITERS 8
#define ROUNDS 20

/* Writer i's payload: 4 KiB of byte i, so a torn file shows. */
static void payload_of(int i, unsigned char *p, size_t n)
{
    memset(p, 'A' + i, n);
}

static int one_writer(int i, const char *bundle, rt_cache_key k)
{
    unsigned char p[4096];
    char tuning[32];
    payload_of(i, p, sizeof p);
    snprintf(tuning, sizeof tuning, "ut=%d bt=16 nt=256", i);
    rt_bundle *b = small_bundle(p, sizeof p);
    int bad = 0;
    for (int r = 0; r < ROUNDS; r++) {
        bad += rt_bundle_save(b, bundle) != RNNC_OK;
        rt_cache_write(k, "k", 90, p, sizeof p);
        bad += rt_tuning_put("concurrent shape", tuning) != RNNC_OK;
    }
    rt_bundle_destroy(b);
    return bad ? 1 : 0;
}

static bool one_writers_payload(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 1; i < n; i++)
        if (c[i] != c[0])
            return false;
    return n == 4096 && c[0] >= 'A' && c[0] < 'A' + WRITERS;
}

static void eight_writers_at_once(void **state)
{
    (void)state;
    const char *bundle = at("shared.rnncpkg");
    rt_cache_key k = {7, 8};
    pid_t pids[WRITERS];
    for (int i = 0; i < WRITERS; i++) {
        pids[i] = fork();
        assert_true(pids[i] >= 0);
        if (pids[i] == 0)
            _exit(one_writer(i, bundle, k));
    }
    for (int i = 0; i < WRITERS; i++) {
        int st;
        assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("writer %d failed (status %d)", i, st);
    }
    rt_bundle *b = NULL;
    const void *cubin;
    size_t n;
    static const char *const names[] = {"k"};
    rt_kernel_req r = {.source = "src", .name = "k", .kernels = names, .n_kernels = 1, .sm = 90};
    assert_ok(rt_bundle_load(&b, bundle));
    assert_true(rt_bundle_find(b, &r, 90, &cubin, &n));
    assert_true(one_writers_payload(cubin, n));
    rt_bundle_destroy(b);
    void *entry = NULL;
    char why[160], tuning[64], dir[4200];
    assert_ok(rt_cache_read(k, &entry, &n, why, sizeof why));
    assert_true(one_writers_payload(entry, n));
    free(entry);
    assert_ok(rt_tuning_get("concurrent shape", tuning, sizeof tuning));
    assert_int_equal(strncmp(tuning, "ut=", 3), 0);
    assert_int_equal(temp_files(g_dir), 0);
    snprintf(dir, sizeof dir, "%s/kernels", tu_cache_dir());
    assert_int_equal(temp_files(dir), 0);
    snprintf(dir, sizeof dir, "%s/tuning", tu_cache_dir());
    assert_int_equal(temp_files(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(writer_replaces_a_regular_file),
        cmocka_unit_test(writer_refuses_what_is_not_a_regular_file),
        cmocka_unit_test(writer_discards_where_allowed),
        cmocka_unit_test(writer_honours_the_umask),
        cmocka_unit_test(full_disk_keeps_the_old_file),
        cmocka_unit_test(reader_refuses_fifos_and_directories),
        cmocka_unit_test(reader_nofollow_and_limits),
        cmocka_unit_test(same_file_by_device_and_inode),
        cmocka_unit_test(eight_writers_at_once),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
