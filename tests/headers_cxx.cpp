// The public headers (the readers' too), included twice, from C++, with -Wall -Wextra -Wpedantic -Werror.
#include <bloomkit/bloomkit.h>
#include <bloomkit/bloomkit.h>
#include <bloomkit/experimental.h>
#include <bloomkit/experimental.h>
#include <bloomkit/reader.h>
#include <bloomkit/reader.h>
#include <cstdio>

int main()
{
    bk_bloom *f = nullptr;
    if (bk_bloom_new(1000, 0.01, nullptr, &f) != BK_OK) return 1;
    bk_bloom_add(f, "x", 1);
    bool ok = bk_bloom_contains(f, "x", 1) && bk_version_number() == BK_VERSION_NUMBER;
    bk_bloom_free(f);
    std::printf("headers from C++: %s\n", ok ? "ok" : "FAIL");
    return ok ? 0 : 1;
}
