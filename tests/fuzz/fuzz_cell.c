/*
 * fuzz_cell.c: the .cell parser on any bytes.  A text that parses is printed
 * in canonical form, and that text must parse to an equal cell and print
 * the same again (parse -> print -> parse).
 */
#include "rnnc.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rnnc_cell *a = NULL, *b = NULL;
    char *t1 = NULL, *t2 = NULL;
    if (rnnc_cell_parse(&a, (const char *)data, size, "<fuzz>", NULL, NULL) != RNNC_OK)
        return 0;
    FUZZ_CHECK(rnnc_cell_print(a, &t1) == RNNC_OK);
    if (rnnc_cell_parse(&b, t1, strlen(t1), "<printed>", NULL, NULL) != RNNC_OK) {
        fprintf(stderr, "the printed cell does not parse: %s\n%s\n", rnnc_last_error(), t1);
        abort();
    }
    FUZZ_CHECK(rnnc_cell_equal(a, b));
    FUZZ_CHECK(rnnc_cell_print(b, &t2) == RNNC_OK);
    FUZZ_CHECK(strcmp(t1, t2) == 0);
    rnnc_free(t2);
    rnnc_free(t1);
    rnnc_cell_destroy(b);
    rnnc_cell_destroy(a);
    return 0;
}
