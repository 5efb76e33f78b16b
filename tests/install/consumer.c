/* An outside program built against the installed bloomkit (pkg-config and find_package). */
#include <stdio.h>
#include <bloomkit/bloomkit.h>

int main(void)
{
    bk_bloom *f;
    if (bk_bloom_new(1000, 0.01, NULL, &f) != BK_OK) return 1;
    bk_bloom_add(f, "installed", 9);
    int ok = bk_bloom_contains(f, "installed", 9) && bk_version_number() == BK_VERSION_NUMBER;
    bk_bloom_free(f);
    printf("consumer of bloomkit %s: %s\n", bk_version_string(), ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}
