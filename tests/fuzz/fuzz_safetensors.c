/*
 * fuzz_safetensors.c: the safetensors reader on any bytes.  A file that
 * loads is saved and loaded again: the same tensors (names in order,
 * dtypes, shapes, bytes) must come back (save -> load).
 */
#include "rnnc.h"
#include "runtime/tensor/tensor.h"
#include "tests/fuzz/fuzz.h"

static void check_same(const rnnc_tensors *a, const rnnc_tensors *b)
{
    FUZZ_CHECK(rnnc_tensors_count(a) == rnnc_tensors_count(b));
    for (int i = 0; i < rnnc_tensors_count(a); i++) {
        const char *name = rnnc_tensors_name(a, i);
        FUZZ_CHECK(strcmp(name, rnnc_tensors_name(b, i)) == 0);
        const rnnc_tensor *x = rnnc_tensors_get(a, name), *y = rnnc_tensors_get(b, name);
        FUZZ_CHECK(x && y && x->dtype == y->dtype && x->rank == y->rank);
        FUZZ_CHECK(memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->rank) == 0);
        size_t n = rt_tensor_nbytes(x);
        FUZZ_CHECK(n == rt_tensor_nbytes(y) && (n == 0 || memcmp(x->data, y->data, n) == 0));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rnnc_tensors *a = NULL, *b = NULL;
    const char *path = fuzz_file("in.safetensors", data, size);
    if (rnnc_tensors_load(&a, path) != RNNC_OK)
        return 0;
    char out[128];
    snprintf(out, sizeof out, "%s/out.safetensors", fuzz_dir());
    FUZZ_CHECK(rnnc_tensors_save(a, out) == RNNC_OK);
    if (rnnc_tensors_load(&b, out) != RNNC_OK) {
        fprintf(stderr, "a saved file does not load: %s\n", rnnc_last_error());
        abort();
    }
    check_same(a, b);
    rnnc_tensors_destroy(b);
    rnnc_tensors_destroy(a);
    return 0;
}
